'use strict'
// `require('laneway/openai')`: the `openai` SDK's client shape over a router, for GPT, Claude,
// Nova and families; answers checked by the SDK's own stream helpers and `tsc --strict`, errors
// as the SDK's classes and Laneway's.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { execFileSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const sdk = require('openai')
const { ChatCompletionStream } = require('openai/lib/ChatCompletionStream')
const laneway = require('..')
const { OpenAI } = require('../openai')
const { startEmulator } = require('../testing')

const TERRA = 'openai.gpt-5.6-terra'
const HAIKU = 'anthropic.claude-haiku-4-5-20251001-v1:0'
const NOVA = 'amazon.nova-lite-v1:0'
const WEATHER = { type: 'function', function: { name: 'weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }
// A self-hosted model on a SageMaker endpoint beside the built-in Bedrock models.
const CONFIG = { models: { 'laneway-demo-llm': { provider: 'sagemaker', endpoints: [{ name: 'laneway-demo-llm', region: 'us-east-1', format: 'tgi' }], price: { input_per_1k: 0.0002, output_per_1k: 0.0006 } } } }
let emu, client
before(async () => {
  emu = await startEmulator({ scenario: 'fast' })
  client = new OpenAI({ config: CONFIG, ...emu.routerOptions() })
})
after(async () => { await emu.stop() })

test('a chat completion has the SDK shape and Laneway\'s decision, for every kind of model (GPT, Claude, Nova, a family, SageMaker)', async () => {
  for (const [model, extra] of [[TERRA], [HAIKU], [NOVA], ['nova', { family: 'nova' }], ['laneway-demo-llm']]) {
    const c = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Say hello.' }], max_tokens: 64, seed: 1, laneway: extra })
    assert.equal(c.object, 'chat.completion')
    assert.ok(c.choices[0].message.content, model)
    assert.equal(c.usage.total_tokens, c.usage.prompt_tokens + c.usage.completion_tokens)
    assert.ok(c.laneway.cost_usd > 0)
    assert.ok(c.laneway.decision.reasons.some(r => r.reason === 'field_not_honoured' && r.field === 'seed'))
  }
})

test('a streamed tool call reads through the SDK\'s own ChatCompletionStream', async () => {
  const stream = await client.chat.completions.create({ model: TERRA, messages: [{ role: 'user', content: 'Weather in Oslo?' }], tools: [WEATHER], tool_choice: 'required', stream: true, stream_options: { include_usage: true } })
  const runner = ChatCompletionStream.fromReadableStream(stream.toReadableStream())
  const done = await runner.finalChatCompletion()
  assert.equal(done.choices[0].finish_reason, 'tool_calls')
  const call = done.choices[0].message.tool_calls[0]
  assert.equal(call.function.name, 'weather')
  assert.ok('city' in JSON.parse(call.function.arguments))
})

test('a chat agent loop sends the answer back as it came', async () => {
  const messages = [{ role: 'user', content: 'Weather in Oslo?' }]
  const first = await client.chat.completions.create({ model: TERRA, messages, tools: [WEATHER], tool_choice: 'required' })
  const message = first.choices[0].message
  messages.push(message)
  for (const c of message.tool_calls) messages.push({ role: 'tool', tool_call_id: c.id, content: '{"celsius":21}' })
  const second = await client.chat.completions.create({ model: TERRA, messages, tools: [WEATHER] })
  assert.equal(second.choices[0].finish_reason, 'stop')
})

test('responses, whole and streamed, with reasoning going back on the next turn', async () => {
  const r = await client.responses.create({ model: TERRA, input: 'Plan a trip to Lisbon.', reasoning: { effort: 'low' } })
  assert.equal(r.status, 'completed')
  assert.ok(r.output_text && r.output[0].type === 'reasoning')
  const next = await client.responses.create({ model: TERRA, input: [{ role: 'user', content: 'Plan a trip to Lisbon.' }, ...r.output, { role: 'user', content: 'Shorter.' }], reasoning: { effort: 'low' } })
  assert.ok(next.output_text)
  const events = []
  for await (const e of await client.responses.create({ model: TERRA, input: 'Tell me a story', stream: true })) events.push(e)
  assert.deepEqual(events.map(e => e.sequence_number), events.map((_, i) => i))
  assert.equal(events[0].type, 'response.created')
  const last = events[events.length - 1]
  assert.equal(last.type, 'response.completed')
  assert.equal(last.response.laneway.decision.model, TERRA)
  assert.equal(last.response.output_text, events.filter(e => e.type === 'response.output_text.delta').map(e => e.delta).join(''))
  assert.equal(events.filter(e => e.type === 'response.output_text.delta').map(e => e.delta).join(''), last.response.output.find(o => o.type === 'message').content[0].text)
})

test('errors are the SDK\'s classes and Laneway\'s', async () => {
  await assert.rejects(client.chat.completions.create({ model: TERRA, messages: [{ role: 'user', content: 'x' }], n: 2 }), e => {
    assert.ok(e instanceof sdk.BadRequestError, e.constructor.name)
    assert.ok(e instanceof laneway.InvalidRequestError && e instanceof laneway.LanewayError)
    assert.ok(!(e instanceof laneway.ThrottledError))
    assert.equal(e.status, 400)
    assert.equal(e.param, 'n')
    assert.equal(e.kind, 'invalid_request')
    return true
  })
  await assert.rejects(client.responses.create({ model: TERRA, input: 'x', previous_response_id: 'resp_1' }), sdk.BadRequestError)
  const throttled = await startEmulator({ scenario: 'fast' })
  try {
    for (const region of ['us-east-1', 'us-west-2', 'eu-west-1']) await throttled.addFault({ kind: 'throttle', model: NOVA, region })
    const c = new OpenAI({ config: { routing: { max_attempts: 2 } }, ...throttled.routerOptions() })
    for (const stream of [false, true]) {
      // A stream that cannot begin rejects in `create`, as the SDK's does.
      await assert.rejects(c.chat.completions.create({ model: NOVA, messages: [{ role: 'user', content: 'x' }], stream, laneway: { deadline_ms: 3000 } }), e => {
        assert.ok(e instanceof sdk.RateLimitError && e instanceof laneway.LanewayError, e.constructor.name)
        assert.equal(e.status, 429)
        return true
      })
    }
    // The typed router options are taken (a Bedrock API key among them).
    assert.ok(new OpenAI({ bedrockApiKey: throttled.bedrockApiKey(), ...throttled.routerOptions() }).router)
  } finally { await throttled.stop() }
})

test('headers and query are said as not sent; an abort and an early break end the call', async () => {
  const c = await client.chat.completions.create({ model: NOVA, messages: [{ role: 'user', content: 'hi' }] }, { headers: { 'X-Trace': '1' }, query: { a: 'b' }, timeout: 30000 })
  const fields = c.laneway.decision.reasons.filter(r => r.reason === 'field_not_honoured').map(r => r.field)
  assert.ok(fields.includes('extra_headers') && fields.includes('extra_query'), fields)
  const ac = new AbortController()
  ac.abort()
  await assert.rejects(client.chat.completions.create({ model: NOVA, messages: [{ role: 'user', content: 'hi' }] }, { signal: ac.signal }), sdk.APIUserAbortError)
  const stream = await client.chat.completions.create({ model: NOVA, messages: [{ role: 'user', content: 'A long story' }], max_tokens: 400, stream: true })
  for await (const chunk of stream) { assert.equal(chunk.object, 'chat.completion.chunk'); break }
  const aborted = await client.chat.completions.create({ model: NOVA, messages: [{ role: 'user', content: 'A long story' }], max_tokens: 400, stream: true })
  let n = 0
  // As the SDK's: an abort ends the iteration quietly, at once.
  for await (const _ of aborted) { if (++n === 2) aborted.controller.abort() }
  assert.equal(n, 2)
  const before = new AbortController()
  before.abort()
  await assert.rejects(client.chat.completions.create({ model: NOVA, messages: [{ role: 'user', content: 'hi' }], stream: true }, { signal: before.signal }), sdk.APIUserAbortError)
})

test('answers compile as the SDK\'s types with tsc --strict', async () => {
  const chat = await client.chat.completions.create({ model: TERRA, messages: [{ role: 'user', content: 'hi' }], tools: [WEATHER], tool_choice: 'required' })
  const resp = await client.responses.create({ model: TERRA, input: 'hi', reasoning: { effort: 'low' } })
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'laneway-openai-ts-'))
  const here = path.resolve(__dirname, '..')
  fs.writeFileSync(path.join(dir, 'check.ts'), `
import { OpenAI } from ${JSON.stringify(path.join(here, 'openai'))}
import type { ChatCompletion } from 'openai/resources/chat/completions'
import type { Response } from 'openai/resources/responses/responses'
const chat: ChatCompletion = ${JSON.stringify({ ...chat, laneway: undefined })}
const resp: Response = ${JSON.stringify({ ...resp, laneway: undefined })}
async function use (client: OpenAI): Promise<string> {
  const c = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }], laneway: { slo: 'interactive' } })
  const s = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }], stream: true })
  for await (const chunk of s) { if (chunk.choices[0]) return chunk.choices[0].delta.content ?? '' }
  const r = await client.responses.create({ model: 'm', input: 'x' })
  return (c.choices[0].message.content ?? '') + r.output_text + c.laneway.decision.region + chat.id + resp.id
}
void use
`)
  const tsc = require.resolve('typescript/bin/tsc')
  try {
    execFileSync(process.execPath, [tsc, '--noEmit', '--strict', '--target', 'es2020', '--lib', 'es2020,dom', '--moduleResolution', 'node', '--skipLibCheck', '--typeRoots', path.join(here, 'node_modules', '@types'), '--baseUrl', path.join(here, 'node_modules'), path.join(dir, 'check.ts')], { encoding: 'utf8', cwd: here })
  } catch (e) {
    assert.fail(`tsc: ${e.stdout}${e.stderr}`)
  } finally { fs.rmSync(dir, { recursive: true, force: true }) }
})
