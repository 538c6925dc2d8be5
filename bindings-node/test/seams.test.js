'use strict'
// Laneway under unmodified official clients, at their own seams: the `openai` SDK on
// `laneway.fetch`, the AWS SDK's BedrockRuntimeClient on `laneway.requestHandler` (Converse
// and InvokeModel, whole and streamed), and
// Bedrock's REST paths through `fetch` as the Vercel AI SDK's provider sends them.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const OpenAI = require('openai')
const { BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand, InvokeModelCommand, InvokeModelWithResponseStreamCommand, ThrottlingException, ValidationException } = require('@aws-sdk/client-bedrock-runtime')
const laneway = require('..')
const { startEmulator, ACCESS_KEY_ID, SECRET_ACCESS_KEY } = require('../testing')

const LITE = 'amazon.nova-lite-v1:0'
const STORY = [{ role: 'user', content: [{ text: 'Tell me a long story about the sea.' }] }]
let emu
before(async () => { emu = await startEmulator({ scenario: 'fast' }) })
after(async () => { await emu.stop() })

const credentials = { accessKeyId: ACCESS_KEY_ID, secretAccessKey: SECRET_ACCESS_KEY }
const routed = router => new BedrockRuntimeClient({ region: 'us-east-1', credentials, requestHandler: laneway.requestHandler(router), maxAttempts: 1 })
const direct = () => new BedrockRuntimeClient({ region: 'us-east-1', credentials, endpoint: emu.url, maxAttempts: 1 })

async function streamed (client, input) {
  const out = await client.send(new ConverseStreamCommand(input))
  const names = []
  let text = ''
  for await (const event of out.stream) {
    const name = Object.keys(event).find(k => event[k] !== undefined)
    names.push(name)
    if (name === 'contentBlockDelta' && event.contentBlockDelta.delta.text) text += event.contentBlockDelta.delta.text
  }
  return { names, text }
}

test('the AWS SDK reads Laneway\'s Converse and ConverseStream as the service\'s own', async () => {
  const router = new laneway.Router(emu.routerOptions())
  const whole = await routed(router).send(new ConverseCommand({ modelId: LITE, messages: [{ role: 'user', content: [{ text: 'Say hello.' }] }], inferenceConfig: { maxTokens: 64 } }))
  assert.equal(whole.$metadata.httpStatusCode, 200)
  assert.ok(whole.output.message.content[0].text)
  assert.ok(whole.usage.totalTokens > 0)
  const input = { modelId: LITE, messages: STORY, inferenceConfig: { maxTokens: 2000 } }
  const mine = await streamed(routed(router), input)
  const theirs = await streamed(direct(), input)
  assert.deepEqual(mine.names, theirs.names)
  assert.equal(mine.text, theirs.text)
  assert.ok(mine.names.filter(n => n === 'contentBlockDelta').length >= 40 && mine.text.length > 150)
})

test('a throttle storm and bad input are the AWS SDK\'s own exceptions', async () => {
  const stormy = await startEmulator({ scenario: 'fast' })
  try {
    await stormy.addFault({ kind: 'throttle', model: LITE })
    const router = new laneway.Router(stormy.routerOptions())
    const client = routed(router)
    await laneway.withOptions({ slo: { deadline: 1500 } }, async () => {
      await assert.rejects(client.send(new ConverseCommand({ modelId: LITE, messages: STORY })), e => e instanceof ThrottlingException && e.$metadata.httpStatusCode === 429)
    })
  } finally { await stormy.stop() }
  const router = new laneway.Router(emu.routerOptions())
  await assert.rejects(
    routed(router).send(new ConverseCommand({ modelId: LITE, messages: [{ role: 'user', content: [{ document: { format: 'txt', name: 'notes.txt', source: { bytes: Buffer.from('x') } } }] }] })),
    e => e instanceof ValidationException && /document\.name/.test(e.message)
  )
})

test('the openai SDK on laneway.fetch: whole, streamed, Responses, and its error classes', async () => {
  const router = new laneway.Router(emu.routerOptions())
  const client = require('../openai').client(router)
  assert.ok(client instanceof OpenAI.OpenAI, 'a real openai client')
  const r = await laneway.withOptions({ slo: { class: 'interactive' } }, async () => {
    const answer = await client.chat.completions.create({ model: LITE, messages: [{ role: 'user', content: 'Say hello.' }], max_completion_tokens: 64 })
    const decision = laneway.lastDecision()
    assert.equal(decision.model, LITE)
    assert.ok(decision.costUsd > 0 && decision.attemptsSent >= 1)
    return answer
  })
  assert.ok(r.choices[0].message.content)
  assert.equal(laneway.lastDecision(), null)
  let text = ''
  let usage = null
  for await (const chunk of await client.chat.completions.create({ model: LITE, messages: [{ role: 'user', content: 'Tell me a story.' }], stream: true, stream_options: { include_usage: true } })) {
    if (chunk.choices.length) text += chunk.choices[0].delta.content || ''
    if (chunk.usage) usage = chunk.usage
  }
  assert.ok(text.length > 50 && usage.completion_tokens > 0)
  const types = []
  for await (const event of await client.responses.create({ model: LITE, input: 'Tell me a story.', stream: true })) types.push(event.type)
  assert.equal(types[0], 'response.created')
  assert.equal(types.at(-1), 'response.completed')
  await assert.rejects(client.chat.completions.create({ model: LITE, messages: [] }), e => e instanceof OpenAI.BadRequestError && e.status === 400)
})

test('Bedrock\'s REST paths through fetch, as the Vercel AI SDK sends them; an abort cancels the call', async () => {
  const router = new laneway.Router(emu.routerOptions())
  const lfetch = laneway.fetch(router)
  const url = `https://bedrock-runtime.us-east-1.amazonaws.com/model/${encodeURIComponent(LITE)}/converse-stream`
  const cancelled = async () => (await emu.counters()).reduce((n, r) => n + r.cancelled, 0)
  const before = await cancelled()
  const controller = new AbortController()
  const res = await lfetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'AWS4-HMAC-SHA256 ignored' }, body: JSON.stringify({ messages: STORY, inferenceConfig: { maxTokens: 2000 } }), signal: controller.signal })
  assert.equal(res.status, 200)
  assert.equal(res.headers.get('content-type'), 'application/vnd.amazon.eventstream')
  const reader = res.body.getReader()
  const first = await reader.read()
  assert.ok(first.value.length > 12)
  controller.abort()
  await assert.rejects(reader.read())
  // No sleeping: ask the emulator (a round trip each time) until it has seen the stream's
  // connection close; bounded.
  for (let i = 0; i < 2000 && (await cancelled()) <= before; i++);
  assert.ok((await cancelled()) > before, 'the emulator saw the stream cancelled')
  // What Laneway does not answer goes to the fallback.
  const seen = []
  const elsewhere = laneway.fetch(router, { fallback: async u => { seen.push(String(u)); return new Response('{}', { status: 200 }) } })
  assert.equal((await elsewhere('http://laneway.invalid/v1/models')).status, 200)
  assert.deepEqual(seen, ['http://laneway.invalid/v1/models'])
})

test('InvokeModel with Claude\'s Messages body, whole and streamed, through the AWS SDK', async () => {
  const router = new laneway.Router(emu.routerOptions())
  const client = routed(router)
  const HAIKU = 'us.anthropic.claude-haiku-4-5-20251001-v1:0'
  const body = JSON.stringify({ anthropic_version: 'bedrock-2023-05-31', max_tokens: 400, messages: [{ role: 'user', content: 'Tell me a long story about the sea.' }] })
  const whole = await client.send(new InvokeModelCommand({ modelId: HAIKU, body, contentType: 'application/json' }))
  assert.equal(whole.contentType, 'application/json')
  const message = JSON.parse(Buffer.from(whole.body).toString())
  assert.equal(message.type, 'message')
  assert.ok(message.content[0].text && message.usage.output_tokens > 0)
  const events = await laneway.withOptions({}, async () => {
    const out = await client.send(new InvokeModelWithResponseStreamCommand({ modelId: HAIKU, body, contentType: 'application/json' }))
    const events = []
    for await (const part of out.body) events.push(JSON.parse(Buffer.from(part.chunk.bytes).toString()))
    // A stream's decision, once read to its end.
    assert.match(laneway.lastDecision().model, /^anthropic\.claude/)
    return events
  })
  const kinds = events.map(e => e.type)
  assert.equal(kinds[0], 'message_start')
  assert.deepEqual(kinds.slice(-2), ['message_delta', 'message_stop'])
  const text = events.filter(e => e.type === 'content_block_delta').map(e => e.delta.text).join('')
  assert.ok(text.length > 100)
  assert.equal(events.at(-1)['amazon-bedrock-invocationMetrics'].outputTokenCount, events.at(-2).usage.output_tokens)
  // A model whose body Laneway does not read goes where it was going (here: the emulator).
  const elsewhere = new BedrockRuntimeClient({ region: 'us-east-1', credentials, endpoint: emu.url, maxAttempts: 1, requestHandler: laneway.requestHandler(router) })
  const llama = await elsewhere.send(new InvokeModelCommand({ modelId: 'us.meta.llama3-3-70b-instruct-v1:0', body: JSON.stringify({ prompt: 'Hi', max_gen_len: 8 }) }))
  assert.equal(llama.$metadata.httpStatusCode, 200)
})
