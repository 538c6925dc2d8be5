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

/** A logger that keeps its records, and resolves `arrived(pattern)` when one matches. */
function collecting () {
  const records = []
  const waiting = []
  const at = level => (message, meta) => {
    records.push({ level, message, meta })
    for (const w of waiting.splice(0)) if (w.pattern.test(message)) w.resolve(); else waiting.push(w)
  }
  const arrived = pattern => records.some(r => pattern.test(r.message))
    ? Promise.resolve()
    : new Promise(resolve => waiting.push({ pattern, resolve }))
  return { records, arrived, logger: { error: at('error'), warn: at('warn'), info: at('info'), debug: at('debug') } }
}

// Redis configured but not there: the shared state degrades, and the core says why.
const degraded = prefix => ({ shared: { redis_url: 'redis://127.0.0.1:9', key_prefix: prefix, timeout: 50 } })

test('a degraded shared state reaches the logger once, with its module and fields', { timeout: 60000 }, async () => {
  const { records, arrived, logger } = collecting()
  // Logs are process-wide: a logger at `error` gets none of these warnings.
  const errorsOnly = collecting()
  const router = new laneway.Router({ ...emu.routerOptions(), config: degraded('node-logs-a'), logger, logLevel: 'info' })
  const quiet = new laneway.Router({ ...emu.routerOptions(), logger: errorsOnly.logger, logLevel: 'error' })
  for (let i = 0; i < 25; i++) await router.generate('hi', { family: 'nova', maxTokens: 8 })
  await quiet.generate('hi', { family: 'nova', maxTokens: 8 })
  // Delivered from the addon's thread through the event loop: the test waits on the logger's
  // call itself (bounded by the runner's timeout), not on a clock.
  await arrived(/shared state unusable/)
  const unusable = () => records.filter(r => r.message.includes('shared state unusable'))
  const r = unusable()[0]
  assert.equal(r.level, 'warn')
  assert.match(r.meta.logger, /^laneway\.state\.shared/)
  assert.ok(r.meta.fields.error, JSON.stringify(r.meta))
  assert.equal(unusable().length, 1, 'said once for the episode, not once per call')
  // The batch that carried the warning went to every logger: the one at `error` dropped it.
  assert.equal(errorsOnly.records.filter(r => r.level === 'warn').length, 0)
  assert.equal(laneway.logDropped(), 0)
})

test('a logger that is not one, or an unknown level, is refused by name', () => {
  assert.throws(() => new laneway.Router({ ...emu.routerOptions(), logger: 42 }), e => e instanceof laneway.InvalidRequestError && e.field === 'logger')
  assert.throws(() => new laneway.Router({ ...emu.routerOptions(), logLevel: 'loud' }), e => e instanceof laneway.InvalidRequestError && e.field === 'logLevel')
})
