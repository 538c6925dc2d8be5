'use strict'
// Each call is a span in the app's OpenTelemetry trace: a CLIENT span `chat {model}` under the
// caller's span, with the GenAI conventions' attributes and Laneway's decision, an event per
// failover, the error kind on failure, and no prompt text.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const api = require('@opentelemetry/api')
const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base')
const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks')
const laneway = require('..')
const { startEmulator } = require('../testing')

const exporter = new InMemorySpanExporter()
api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
api.trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }))
const app = api.trace.getTracer('app')

let emu, router
before(async () => {
  emu = await startEmulator({ scenario: 'fast' })
  router = new laneway.Router(emu.routerOptions())
})
after(async () => { await emu.stop() })

const lanewaySpans = () => exporter.getFinishedSpans().filter(s => s.instrumentationScope.name === 'laneway')

test("a call is a client span under the caller's", async () => {
  exporter.reset()
  let parent
  await app.startActiveSpan('agent turn', async span => {
    parent = span
    await router.generate('the secret prompt text', { family: 'nova', slo: 'background', maxTokens: 16 })
    span.end()
  })
  const [span] = lanewaySpans()
  assert.equal(span.name, 'chat nova')
  assert.equal(span.kind, api.SpanKind.CLIENT)
  assert.equal(span.parentSpanContext.spanId, parent.spanContext().spanId)
  const a = span.attributes
  assert.equal(a['gen_ai.provider.name'], 'aws.bedrock')
  assert.ok(a['gen_ai.usage.input_tokens'] > 0)
  assert.equal(a['laneway.tier'], 'flex')
  assert.ok(a['laneway.reasons'].includes('tier_from_slo'))
  assert.equal(span.instrumentationScope.schemaUrl, 'https://opentelemetry.io/schemas/1.41.1')
  assert.ok(!JSON.stringify(a).includes('secret prompt'))
})

test('a stream is a span ended at its completion, and a failure an error', async () => {
  exporter.reset()
  for await (const ev of router.stream('hi', { family: 'nova', maxTokens: 8 })) assert.ok(ev)
  let [span] = lanewaySpans()
  assert.equal(span.attributes['gen_ai.request.stream'], true)
  assert.ok(span.attributes['gen_ai.usage.output_tokens'] > 0)
  exporter.reset()
  await assert.rejects(router.generate('hi', { model: 'no.such-model', maxTokens: 8 }), laneway.InvalidRequestError)
  ;[span] = lanewaySpans()
  assert.equal(span.status.code, api.SpanStatusCode.ERROR)
  assert.equal(span.attributes['error.type'], 'invalid_request')
})
