'use strict'
// index.d.ts checked against what the package really returns: values from calls against the
// emulator are written out as typed TypeScript literals and compiled with `tsc --strict`, so a
// key the types lack (or declare but the package does not give) fails the build.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { execFileSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const laneway = require('..')
const { startEmulator } = require('../testing')

const BATCH = { batch: { bucket: 'lw-batch', role_arn: 'arn:aws:iam::123456789012:role/laneway-batch', poll_interval: 20.0 } }

let emu, router
before(async () => {
  emu = await startEmulator({ scenario: 'fast' })
  router = new laneway.Router({ config: BATCH, ...emu.routerOptions() })
})
after(async () => { await emu.stop() })

/** A class instance's getters as a plain object (what its declared properties must match). */
function getters (instance, skip = []) {
  const out = {}
  for (const [key, d] of Object.entries(Object.getOwnPropertyDescriptors(Object.getPrototypeOf(instance)))) {
    if (d.get && !skip.includes(key)) out[key] = instance[key]
  }
  return out
}

test('index.d.ts declares exactly what the package returns', async () => {
  const request = { model: 'amazon.nova-lite-v1:0', maxTokens: 6 }
  const response = await router.generate('Summarise the notes', request)
  const events = []
  for await (const ev of router.stream('Tell me more', request)) events.push(ev)
  const delta = events.find(ev => ev.type === 'text_delta')
  const completed = events.find(ev => ev.type === 'completed')
  const converse = await router.converse({ modelId: 'amazon.nova-lite-v1:0', messages: [{ role: 'user', content: [{ text: 'Hi' }] }], inferenceConfig: { maxTokens: 4 } })
  const handle = await router.submitBatch([0, 1].map(i => ({ prompt: `note ${i}`, model: 'amazon.nova-lite-v1:0', maxTokens: 4, slo: 'batch' })))
  const status = await router.batchStatus(handle)
  const items = await router.batchResults(handle)
  let thrown
  try { await router.generate({ messages: [] }) } catch (e) { thrown = e }

  const literal = value => JSON.stringify(value, null, 1)
  const checks = [
    ['L.Usage', response.usage],
    ['L.Timings', response.timings],
    ['L.Decision', response.decision],
    ['L.ResponseJSON', response.toJSON()],
    ['Omit<L.Response, "toJSON">', getters(response)],
    ['L.StreamEvent', { type: delta.type, text: delta.text, data: delta.data }],
    ['Omit<Extract<L.StreamEvent, { type: "completed" }>, "response">', { type: completed.type, data: completed.data }],
    ['L.ConverseOutput', converse],
    ['L.BatchStatus', status],
    ['L.BatchItem[]', items],
    ['L.ErrorDetails', thrown.details]
  ]
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'laneway-types-'))
  const source = [`import type * as L from ${JSON.stringify(path.resolve(__dirname, '..', 'index'))}`]
  checks.forEach(([type, value], i) => source.push(`export const v${i}: ${type} = ${literal(value)}`))
  source.push('export const responseClass: L.Response | null = null')
  fs.writeFileSync(path.join(dir, 'check.ts'), source.join('\n') + '\n')
  const tsc = require.resolve('typescript/bin/tsc')
  try {
    execFileSync(process.execPath, [tsc, '--noEmit', '--strict', '--target', 'es2020', '--moduleResolution', 'node', path.join(dir, 'check.ts')], { encoding: 'utf8' })
  } catch (e) {
    assert.fail(`index.d.ts disagrees with the package:\n${e.stdout}`)
  }
  assert.ok(thrown instanceof laneway.InvalidRequestError)
})
