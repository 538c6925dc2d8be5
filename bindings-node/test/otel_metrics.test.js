'use strict'
// Laneway's metrics on the app's OpenTelemetry meter: the instruments of the core's catalog with
// the names and attributes of `prometheus()` (and so of a Rust app's meter), gauges observed at
// collection, and nothing a caller sent in an attribute.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const api = require('@opentelemetry/api')
const { MeterProvider, MetricReader } = require('@opentelemetry/sdk-metrics')
const laneway = require('..')
const { startEmulator } = require('../testing')

class TestReader extends MetricReader {
  async onForceFlush () {}
  async onShutdown () {}
}

// The app's global provider, registered before any router of this file is made.
const globalReader = new TestReader()
api.metrics.setGlobalMeterProvider(new MeterProvider({ readers: [globalReader] }))

const SPECS = new Map(laneway._metricInstruments().map(s => [s.name, s]))
const PROM_KINDS = new Map([...SPECS.values()].map(s => [s.prometheus_name, s.kind]))

/** Every data point of one collection: Map of `name|sorted attributes JSON` to { name, attributes, point }. */
async function points (reader) {
  const { resourceMetrics } = await reader.collect()
  const out = new Map()
  for (const sm of resourceMetrics.scopeMetrics) {
    if (sm.scope.name !== 'laneway') continue
    for (const m of sm.metrics) {
      for (const p of m.dataPoints) {
        const attributes = Object.entries(p.attributes).sort()
        out.set(`${m.descriptor.name}|${JSON.stringify(attributes)}`, { name: m.descriptor.name, attributes, point: p })
      }
    }
  }
  return out
}

/** The OpenTelemetry points named and labelled as the Prometheus text names them. */
function asPrometheus (got) {
  const out = new Set()
  for (const { name, attributes, point } of got.values()) {
    const spec = SPECS.get(name)
    if (spec.kind === 'histogram' && point.value.count === 0) continue
    // As the Prometheus side: a counter still at zero is left out of both.
    if (spec.kind === 'counter' && point.value === 0) continue
    const labels = attributes.map(([k, v]) => [k.replaceAll('.', '_'), v]).sort()
    out.add(`${spec.prometheus_name}|${JSON.stringify(labels)}`)
  }
  return out
}

/** The Prometheus text's series, quantile lines as their summary's and zero counters left out. */
function prometheusSeries (text) {
  const out = new Set()
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    assert.ok(m, line)
    let name = m[1]
    const labels = [...(m[2] || '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map(x => [x[1], x[2]]).filter(([k]) => k !== 'quantile').sort()
    for (const suffix of ['_sum', '_count']) {
      if (name.endsWith(suffix) && PROM_KINDS.has(name.slice(0, -suffix.length))) name = name.slice(0, -suffix.length)
    }
    if (PROM_KINDS.get(name) === 'counter' && Number(m[3]) === 0) continue
    out.add(`${name}|${JSON.stringify(labels)}`)
  }
  return out
}

const sum = (got, name, f) => [...got.values()].filter(x => x.name === name).reduce((a, x) => a + f(x.point), 0)

let emu
before(async () => { emu = await startEmulator({ scenario: 'fast' }) })
after(async () => { await emu.stop() })

async function traffic (router) {
  for (let i = 0; i < 3; i++) {
    for await (const ev of router.stream(`question ${i}`, { family: 'nova', slo: 'interactive', maxTokens: 16, taskId: 't' })) assert.ok(ev)
  }
  await router.generate('the secret prompt text', { family: 'nova', slo: 'background', maxTokens: 16, taskId: 't' })
  await emu.addFault({ kind: 'outage', region: 'us-east-1', count: 1 })
  try {
    await router.generate('hi', { model: 'amazon.nova-lite-v1:0', maxTokens: 8 })
  } catch {} finally { await emu.clearFaults() }
  router.finishTask('t', true)
}

test("the app's meter gets the Prometheus text's names and labels", async () => {
  const reader = new TestReader()
  const router = new laneway.Router(emu.routerOptions())
  router.instrument(new MeterProvider({ readers: [reader] }))
  await traffic(router)
  const got = await points(reader)
  const names = new Set([...got.values()].map(x => x.name))
  for (const name of names) assert.ok(SPECS.has(name), name)
  for (const name of ['gen_ai.client.operation.duration', 'gen_ai.client.token.usage', 'gen_ai.client.operation.time_to_first_chunk', 'laneway.cost', 'laneway.requests.in_flight', 'laneway.attempt.errors', 'laneway.breaker.state', 'laneway.region.ejected', 'laneway.tasks']) {
    assert.ok(names.has(name), name)
  }
  const otel = asPrometheus(got)
  const prom = prometheusSeries(router.prometheus())
  assert.deepEqual([...otel].filter(x => !prom.has(x)), [], 'only in OpenTelemetry')
  assert.deepEqual([...prom].filter(x => !otel.has(x)), [], 'only in Prometheus')

  const snapshot = router.metrics()
  const calls = snapshot.lanes.reduce((a, [, lane]) => a + lane.requests, 0)
  assert.ok(calls >= 4)
  assert.equal(sum(got, 'gen_ai.client.operation.duration', p => p.value.count), calls)
  const cost = sum(got, 'laneway.cost', p => p.value)
  assert.ok(Math.abs(cost - snapshot.lanes.reduce((a, [, lane]) => a + lane.cost_usd, 0)) < 1e-12)
  const unavailable = [...got.values()].filter(x => x.name === 'laneway.attempt.errors' && Object.fromEntries(x.attributes)['error.type'] === 'unavailable')
  assert.ok(unavailable.length >= 1)
  assert.equal(sum(got, 'laneway.requests.in_flight', p => p.value), 0)
  const values = [...got.values()].flatMap(x => x.attributes.map(([, v]) => v))
  assert.ok(!values.some(v => String(v).includes('secret') || v === 't'))
  assert.equal(router._instruments.dropped(), 0)
})

test("a router made after the app's provider is registered is instrumented already", async () => {
  const count = async () => sum(await points(globalReader), 'gen_ai.client.operation.duration', p => p.value.count)
  const before = await count()
  const router = new laneway.Router(emu.routerOptions())
  await router.generate('hi', { family: 'nova', maxTokens: 8 })
  assert.equal(await count(), before + 1)
})

test('instrumenting again moves the metrics to the new provider', async () => {
  const first = new TestReader()
  const second = new TestReader()
  const router = new laneway.Router(emu.routerOptions())
  router.instrument(new MeterProvider({ readers: [first] }))
  await router.generate('hi', { family: 'nova', maxTokens: 8 })
  router.instrument(new MeterProvider({ readers: [second] }))
  await router.generate('hi', { family: 'nova', maxTokens: 8 })
  const count = async reader => sum(await points(reader), 'gen_ai.client.operation.duration', p => p.value.count)
  assert.deepEqual([await count(first), await count(second)], [1, 1])
})


test('routers sharing a provider are each observed, and instrumenting again keeps the gauges', async () => {
  const reader = new TestReader()
  const provider = new MeterProvider({ readers: [reader] })
  const a = new laneway.Router(emu.routerOptions())
  const b = new laneway.Router(emu.routerOptions())
  a.instrument(provider)
  b.instrument(provider)
  await a.generate('hi', { family: 'nova', maxTokens: 8 })
  await b.generate('hi', { family: 'nova', maxTokens: 8 })
  let got = await points(reader)
  assert.equal(sum(got, 'gen_ai.client.operation.duration', p => p.value.count), 2)
  assert.ok([...got.values()].some(x => x.name === 'laneway.breaker.state'))
  a.instrument(provider)
  got = await points(reader)
  assert.ok([...got.values()].some(x => x.name === 'laneway.requests.in_flight'))
  assert.ok([...got.values()].some(x => x.name === 'laneway.region.ejected'))
})
