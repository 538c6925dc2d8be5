'use strict'
// Laneway's logs reach the router's `logger`: the core's warnings with their module's logger
// name and fields, at the logger's level; `logger: null` gets nothing, and a bad logger is
// refused by name.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const laneway = require('..')
const { startEmulator } = require('../testing')

let emu
before(async () => { emu = await startEmulator({ scenario: 'fast' }) })
after(async () => { await emu.stop() })

function collecting () {
  const records = []
  const at = level => (message, meta) => records.push({ level, message, meta })
  return { records, logger: { error: at('error'), warn: at('warn'), info: at('info'), debug: at('debug') } }
}

// Redis configured but not there: the shared state degrades, and the core says why.
const degraded = prefix => ({ shared: { redis_url: 'redis://127.0.0.1:9', key_prefix: prefix, timeout: 50 } })

// Delivery is asynchronous (a thread hands batches to the event loop): yield to it until the
// record arrives, bounded by tries.
async function until (what, condition, tries = 400) {
  for (let i = 0; i < tries; i++) {
    if (condition()) return
    await new Promise(resolve => setTimeout(resolve, 25))
  }
  assert.fail(`${what}: never happened`)
}

test('a degraded shared state reaches the logger once, with its module and fields', async () => {
  const { records, logger } = collecting()
  const silent = collecting()
  const router = new laneway.Router({ ...emu.routerOptions(), config: degraded('node-logs-a'), logger, logLevel: 'info' })
  const quiet = new laneway.Router({ ...emu.routerOptions(), logger: null })
  for (let i = 0; i < 25; i++) await router.generate('hi', { family: 'nova', maxTokens: 8 })
  await quiet.generate('hi', { family: 'nova', maxTokens: 8 })
  const unusable = () => records.filter(r => r.message.includes('shared state unusable'))
  await until('the warning', () => unusable().length > 0)
  const r = unusable()[0]
  assert.equal(r.level, 'warn')
  assert.match(r.meta.logger, /^laneway\.state\.shared/)
  assert.ok(r.meta.fields.error, JSON.stringify(r.meta))
  assert.equal(unusable().length, 1, 'said once for the episode, not once per call')
  assert.equal(silent.records.length, 0)
  assert.equal(laneway.logDropped(), 0)
})

test('a logger that is not one, or an unknown level, is refused by name', () => {
  assert.throws(() => new laneway.Router({ ...emu.routerOptions(), logger: 42 }), e => e instanceof laneway.InvalidRequestError && e.field === 'logger')
  assert.throws(() => new laneway.Router({ ...emu.routerOptions(), logLevel: 'loud' }), e => e instanceof laneway.InvalidRequestError && e.field === 'logLevel')
})
