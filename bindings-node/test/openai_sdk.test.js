'use strict'
// The official `openai` JavaScript SDK pointed at the emulator's Bedrock OpenAI-compatible
// endpoints (`baseURL`, a Bedrock API key): whole and streamed answers, tools, structured
// output, and the SDK's error classes for Bedrock's errors.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const OpenAI = require('openai')
const { startEmulator } = require('../testing')

const GPT_OSS = 'openai.gpt-oss-120b-1:0'
// bedrock-mantle's id for it; mantle serves it by both APIs, runtime by Chat Completions only.
const GPT_OSS_MANTLE = 'openai.gpt-oss-120b'
const LOW = { effort: 'low' }
let emu
before(async () => { emu = await startEmulator({ scenario: 'fast' }) })
after(async () => { await emu.stop() })

// bedrock-runtime's OpenAI-compatible endpoint, and bedrock-mantle's.
const client = (region = 'us-east-1') => new OpenAI({ baseURL: `${emu.url}/openai/v1`, apiKey: emu.bedrockApiKey(region), maxRetries: 0 })
const mantle = (region = 'us-east-1') => new OpenAI({ baseURL: `${emu.url}/v1`, apiKey: emu.bedrockApiKey(region), maxRetries: 0 })

test('chat completions, whole and streamed, with a forced tool call', async () => {
  const r = await client().chat.completions.create({ model: GPT_OSS, messages: [{ role: 'user', content: 'Say hello.' }], max_completion_tokens: 2000, reasoning_effort: 'low' })
  assert.equal(r.object, 'chat.completion')
  assert.ok(r.choices[0].message.content)
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens)
  const stream = await client().chat.completions.create({ model: GPT_OSS, messages: [{ role: 'user', content: 'Tell me a story.' }], max_completion_tokens: 2000, reasoning_effort: 'low', stream: true, stream_options: { include_usage: true } })
  let text = ''
  let usage = null
  for await (const chunk of stream) {
    if (chunk.choices.length) text += chunk.choices[0].delta.content || ''
    if (chunk.usage) usage = chunk.usage
  }
  assert.ok(text && usage.completion_tokens > 0)
  // The SDK's accumulating helper checks the tool-call deltas' shape.
  const tools = [{ type: 'function', function: { name: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }]
  const runner = client().chat.completions.stream({ model: GPT_OSS, messages: [{ role: 'user', content: 'Weather?' }], tools, tool_choice: { type: 'function', function: { name: 'weather' } }, max_completion_tokens: 2000, reasoning_effort: 'low' })
  const done = await runner.finalChatCompletion()
  const call = done.choices[0].message.tool_calls[0]
  assert.equal(done.choices[0].finish_reason, 'tool_calls')
  assert.ok('city' in JSON.parse(call.function.arguments))
})

test('responses, whole and through the SDK\'s strict stream accumulator, with structured output', async () => {
  const r = await mantle().responses.create({ model: GPT_OSS_MANTLE, instructions: 'Be brief.', input: 'Say hello.', max_output_tokens: 2000, reasoning: LOW })
  assert.equal(r.status, 'completed')
  assert.ok(r.output_text)
  const stream = mantle().responses.stream({ model: GPT_OSS_MANTLE, input: 'Tell me a story.', max_output_tokens: 2000, reasoning: LOW })
  let deltas = ''
  for await (const ev of stream) if (ev.type === 'response.output_text.delta') deltas += ev.delta
  const final = await stream.finalResponse()
  assert.equal(deltas, final.output_text)
  const schema = { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'], additionalProperties: false }
  const s = await mantle().responses.create({ model: GPT_OSS_MANTLE, input: 'Answer.', max_output_tokens: 2000, reasoning: LOW, text: { format: { type: 'json_schema', name: 'answer', schema, strict: true } } })
  assert.equal(typeof JSON.parse(s.output_text).answer, 'string')
})

test('Bedrock errors raise the SDK\'s classes', async () => {
  const bad = new OpenAI({ baseURL: `${emu.url}/openai/v1`, apiKey: 'not-a-key', maxRetries: 0 })
  await assert.rejects(bad.chat.completions.create({ model: GPT_OSS, messages: [{ role: 'user', content: 'x' }] }), e => e instanceof OpenAI.AuthenticationError)
  await assert.rejects(client().chat.completions.create({ model: 'openai.no-such-model', messages: [{ role: 'user', content: 'x' }] }), e => e instanceof OpenAI.BadRequestError)
  await emu.addFault({ kind: 'throttle', model: GPT_OSS, region: 'eu-west-1' })
  await assert.rejects(mantle('eu-west-1').responses.create({ model: GPT_OSS_MANTLE, input: 'x' }), e => e instanceof OpenAI.RateLimitError)
  await emu.addFault({ kind: 'break_stream', model: GPT_OSS, region: 'us-west-2', after_tokens: 3 })
  await assert.rejects(async () => {
    const s = mantle('us-west-2').responses.stream({ model: GPT_OSS_MANTLE, input: 'Tell me a story.', max_output_tokens: 2000 })
    for await (const _ of s) {} // eslint-disable-line no-unused-vars
  }, e => e instanceof OpenAI.APIError && /interrupted/.test(e.message))
})

test('each endpoint serves its models by their own ids and APIs', async () => {
  await assert.rejects(client().responses.create({ model: GPT_OSS, input: 'x' }), e => e instanceof OpenAI.BadRequestError && /does not support/.test(e.message))
  await assert.rejects(mantle().chat.completions.create({ model: GPT_OSS, messages: [{ role: 'user', content: 'x' }] }), e => e instanceof OpenAI.NotFoundError)
  const ids = []
  for await (const m of mantle().models.list()) ids.push(m.id)
  assert.ok(ids.includes(GPT_OSS_MANTLE))
})
