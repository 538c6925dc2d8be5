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

// Calls that reach Laneway through the official clients' seams are spans too.
const LITE = 'amazon.nova-lite-v1:0'

test("a call through the AWS SDK's request handler is a span under the caller's", async () => {
  exporter.reset()
  const { BedrockRuntimeClient, ConverseCommand } = require('@aws-sdk/client-bedrock-runtime')
  const client = new BedrockRuntimeClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' }, requestHandler: laneway.requestHandler(router), maxAttempts: 1 })
  let parent
  await app.startActiveSpan('agent turn', async span => {
    parent = span
    await client.send(new ConverseCommand({ modelId: LITE, messages: [{ role: 'user', content: [{ text: 'the secret prompt text' }] }], inferenceConfig: { maxTokens: 32 } }))
    span.end()
  })
  const [span, ...more] = lanewaySpans()
  assert.equal(more.length, 0)
  assert.equal(span.name, `chat ${LITE}`)
  assert.equal(span.parentSpanContext.spanId, parent.spanContext().spanId)
  assert.equal(span.attributes['gen_ai.response.model'], LITE)
  assert.ok(span.attributes['gen_ai.usage.output_tokens'] > 0 && span.attributes['laneway.cost_usd'] > 0)
  assert.ok(!JSON.stringify(span.attributes).includes('secret prompt'))
})

test('a stream through fetch is a span ended with the stream, and a refused call an error span', async () => {
  exporter.reset()
  const fetch = laneway.fetch(router)
  const res = await fetch('http://laneway.invalid/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: LITE, messages: [{ role: 'user', content: 'Tell me a story.' }], stream: true }) })
  assert.equal(lanewaySpans().length, 0, 'open while the stream is read')
  const text = await res.text()
  assert.ok(text.includes('[DONE]'))
  const [span] = lanewaySpans()
  assert.equal(span.attributes['gen_ai.request.stream'], true)
  assert.ok(span.attributes['gen_ai.usage.output_tokens'] > 0)
  assert.notEqual(span.status.code, api.SpanStatusCode.ERROR)

  exporter.reset()
  const bad = await fetch('http://laneway.invalid/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: LITE, messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: -1 }) })
  assert.equal(bad.status, 400)
  const [failed] = lanewaySpans()
  assert.equal(failed.status.code, api.SpanStatusCode.ERROR)
  assert.ok(failed.attributes['error.type'])
})

test("inside an instrumentation's GenAI span Laneway adds to it", async () => {
  exporter.reset()
  const { BedrockRuntimeClient, ConverseCommand } = require('@aws-sdk/client-bedrock-runtime')
  const client = new BedrockRuntimeClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' }, requestHandler: laneway.requestHandler(router), maxAttempts: 1 })
  await app.startActiveSpan(`chat ${LITE}`, { kind: api.SpanKind.CLIENT, attributes: { 'gen_ai.operation.name': 'chat' } }, async span => {
    await client.send(new ConverseCommand({ modelId: LITE, messages: [{ role: 'user', content: [{ text: 'hi' }] }], inferenceConfig: { maxTokens: 16 } }))
    span.end()
  })
  assert.equal(lanewaySpans().length, 0)
  const [span] = exporter.getFinishedSpans().filter(s => s.name === `chat ${LITE}`)
  assert.ok(span.attributes['laneway.region'] && span.attributes['laneway.cost_usd'] > 0)
  assert.equal(span.attributes['gen_ai.usage.output_tokens'], undefined)
})
