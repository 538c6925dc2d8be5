'use strict'
// Recorded traffic from Node: `router.advice()` over the calls `[record]` sampled, and the
// trace's lines as the app's OpenTelemetry log records (`router.recordLogs`).
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { LoggerProvider, SimpleLogRecordProcessor, InMemoryLogRecordExporter } = require('@opentelemetry/sdk-logs')
const laneway = require('..')
const { startEmulator } = require('../testing')

let emu
before(async () => { emu = await startEmulator({ scenario: 'fast' }) })
after(async () => { await emu.stop() })

test('advice names background work sent at priority', async () => {
  const router = new laneway.Router({
    ...emu.routerOptions(),
    config: { record: { sample: 1.0 }, slo_tiers: { background: ['priority'] } }
  })
  for (let i = 0; i < 8; i++) {
    await router.generate(`summarise report ${i}`, { model: 'amazon.nova-lite-v1:0', slo: 'background', maxTokens: 32 })
  }
  assert.equal(await router.flushRecord(), true)
  const advice = router.advice()
  assert.equal(advice.calls, 8)
  const [first] = advice.changes
  assert.deepEqual(first.change, { kind: 'tier', class: 'background', from: 'priority', to: 'flex' })
  assert.deepEqual(first.patch, { slo_tiers: { background: ['flex'] } })
  assert.ok(first.monthly_saving_usd > 0)
  assert.equal(first.risk, 'low')
  assert.ok(advice.not_assessed.length > 0)
})

test('advice and the app\'s logs without [record] are a ConfigError', () => {
  const router = new laneway.Router(emu.routerOptions())
  assert.throws(() => router.advice(), e => e instanceof laneway.ConfigError && /record/.test(e.message))
  assert.throws(() => router.recordLogs(new LoggerProvider()), e => e instanceof laneway.ConfigError)
})

test('the trace goes to the app\'s logs, one record a line, without text', async () => {
  const exporter = new InMemoryLogRecordExporter()
  const provider = new LoggerProvider({ processors: [new SimpleLogRecordProcessor({ exporter })] })
  const router = new laneway.Router({ ...emu.routerOptions(), config: { record: { sample: 1.0 } } })
  router.recordLogs(provider)
  for (let i = 0; i < 3; i++) {
    await router.generate(`the secret prompt ${i}`, { family: 'nova', maxTokens: 16 })
  }
  assert.equal(await router.flushRecord(), true)
  const records = exporter.getFinishedLogRecords()
  assert.equal(records[0].attributes['laneway.record.line'], 'header')
  const calls = records.filter(r => r.eventName === 'laneway.record.call')
  assert.equal(calls.length, 3)
  for (const r of records) {
    const line = JSON.parse(r.body)
    assert.equal(r.eventName, `laneway.record.${line.line}`)
    assert.ok(!r.body.includes('secret'))
  }
  for (const r of calls) assert.ok(JSON.parse(r.body).cost_usd > 0)
})
