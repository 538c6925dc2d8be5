'use strict'
// The JavaScript agent frameworks, unmodified, on Laneway through the official clients' seams
// (`laneway.fetch`, `laneway.requestHandler`), at the versions pinned in package.json: a call,
// a stream, a tool call and structured output where the framework has them, a throttle storm
// raised as the framework's (or its SDK's) own error, and Laneway's decision readable. The
// emulator stands for AWS.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const laneway = require('..')
const { startEmulator, ACCESS_KEY_ID, SECRET_ACCESS_KEY } = require('../testing')

const LITE = 'amazon.nova-lite-v1:0'
const SONNET = 'anthropic.claude-sonnet-4-5-20250929-v1:0'
let emu, stormy
before(async () => {
  emu = await startEmulator({ scenario: 'fast' })
  // Every target of both models throttles: a storm Laneway cannot route around.
  stormy = await startEmulator({ scenario: 'fast' })
  for (const model of [LITE, SONNET]) await stormy.addFault({ kind: 'throttle', model })
})
after(async () => { await emu.stop(); await stormy.stop() })
/** A short deadline for calls into the storm, for code that passes no options of Laneway's. */
const inStorm = fn => laneway.withOptions({ slo: { deadline: 1500 } }, fn)
const credentials = { accessKeyId: ACCESS_KEY_ID, secretAccessKey: SECRET_ACCESS_KEY }

test('LangChain JS: ChatBedrockConverse on a BedrockRuntimeClient with Laneway\'s request handler', async () => {
  const { ChatBedrockConverse } = require('@langchain/aws')
  const { BedrockRuntimeClient } = require('@aws-sdk/client-bedrock-runtime')
  const router = new laneway.Router(emu.routerOptions())
  const client = new BedrockRuntimeClient({ region: 'us-east-1', credentials, requestHandler: laneway.requestHandler(router), maxAttempts: 1 })
  const llm = new ChatBedrockConverse({ model: LITE, region: 'us-east-1', client, maxTokens: 200 })
  const msg = await llm.invoke('Say hello.')
  assert.ok(msg.content)
  let n = 0
  for await (const chunk of await llm.stream('Tell me a story.')) { if (chunk.content) n++ }
  assert.ok(n > 10)
  const { z } = require('zod')
  const sonnet = new ChatBedrockConverse({ model: SONNET, region: 'us-east-1', client, maxTokens: 400 })
  const withTool = sonnet.bindTools([{ name: 'weather', description: 'Weather for a city', schema: z.object({ city: z.string() }) }], { tool_choice: 'weather' })
  const called = await laneway.withOptions({}, async () => {
    const called = await withTool.invoke('Weather in Paris?')
    assert.equal(laneway.lastDecision().model, SONNET)
    return called
  })
  assert.equal(called.tool_calls[0].name, 'weather')
  assert.ok(called.tool_calls[0].args.city)
  const city = await sonnet.withStructuredOutput(z.object({ city: z.string() })).invoke('Capital of France?')
  assert.equal(typeof city.city, 'string')
  // A throttle storm: the AWS SDK's own exception, through LangChain.
  const { ThrottlingException } = require('@aws-sdk/client-bedrock-runtime')
  const stormClient = new BedrockRuntimeClient({ region: 'us-east-1', credentials, requestHandler: laneway.requestHandler(new laneway.Router(stormy.routerOptions())), maxAttempts: 1 })
  const throttled = new ChatBedrockConverse({ model: LITE, region: 'us-east-1', client: stormClient })
  await inStorm(() => assert.rejects(throttled.invoke('x'), e => e instanceof ThrottlingException))
})

test('LangChain JS: ChatOpenAI on laneway.fetch', async () => {
  const { ChatOpenAI } = require('@langchain/openai')
  const router = new laneway.Router(emu.routerOptions())
  const llm = new ChatOpenAI({ model: LITE, apiKey: 'unused', maxRetries: 0, configuration: { baseURL: 'http://laneway.invalid/v1', fetch: laneway.fetch(router) } })
  assert.ok((await llm.invoke('Say hello.')).content)
  let n = 0
  for await (const chunk of await llm.stream('Tell me a story.')) { if (chunk.content) n++ }
  assert.ok(n > 10)
  const { z } = require('zod')
  const called = await llm.bindTools([{ name: 'weather', description: 'Weather for a city', schema: z.object({ city: z.string() }) }], { tool_choice: 'weather' }).invoke('Weather in Paris?')
  assert.equal(called.tool_calls[0].name, 'weather')
  const sonnet = new ChatOpenAI({ model: SONNET, apiKey: 'unused', maxRetries: 0, configuration: { baseURL: 'http://laneway.invalid/v1', fetch: laneway.fetch(router) } })
  const city = await sonnet.withStructuredOutput(z.object({ city: z.string() })).invoke('Capital of France?')
  assert.equal(typeof city.city, 'string')
  const throttled = new ChatOpenAI({ model: LITE, apiKey: 'unused', maxRetries: 0, configuration: { baseURL: 'http://laneway.invalid/v1', fetch: laneway.fetch(new laneway.Router(stormy.routerOptions())) } })
  await inStorm(() => assert.rejects(throttled.invoke('x'), e => e.status === 429))
})

test('the Vercel AI SDK: @ai-sdk/openai and @ai-sdk/amazon-bedrock on laneway.fetch, generate and stream', async () => {
  const { generateText, streamText } = require('ai')
  const { createOpenAI } = require('@ai-sdk/openai')
  const { createAmazonBedrock } = require('@ai-sdk/amazon-bedrock')
  const router = new laneway.Router(emu.routerOptions())
  const fetch = laneway.fetch(router)
  const openai = createOpenAI({ baseURL: 'http://laneway.invalid/v1', apiKey: 'unused', fetch })
  const a = await generateText({ model: openai.chat(LITE), prompt: 'Say hello.', maxRetries: 0 })
  assert.ok(a.text)
  const r = await generateText({ model: openai(LITE), prompt: 'Say hello.', maxRetries: 0 })
  assert.ok(r.text)
  const bedrock = createAmazonBedrock({ region: 'us-east-1', accessKeyId: ACCESS_KEY_ID, secretAccessKey: SECRET_ACCESS_KEY, fetch })
  const b = await generateText({ model: bedrock(LITE), prompt: 'Say hello.', maxRetries: 0 })
  assert.ok(b.text && b.usage.outputTokens > 0)
  const s = streamText({ model: bedrock(LITE), prompt: 'Tell me a story.', maxRetries: 0 })
  let text = ''
  for await (const part of s.textStream) text += part
  assert.ok(text.length > 100)
  const o = streamText({ model: openai.chat(LITE), prompt: 'Tell me a story.', maxRetries: 0 })
  let chunks = 0
  for await (const part of o.textStream) if (part) chunks++
  assert.ok(chunks > 10)
})

test('the Vercel AI SDK: a tool call, structured output and a throttle storm, on both providers', async () => {
  const { generateText, generateObject, tool, APICallError } = require('ai')
  const { createOpenAI } = require('@ai-sdk/openai')
  const { createAmazonBedrock } = require('@ai-sdk/amazon-bedrock')
  const { z } = require('zod')
  const providers = r => {
    const fetch = laneway.fetch(r)
    return [
      createOpenAI({ baseURL: 'http://laneway.invalid/v1', apiKey: 'unused', fetch }).chat,
      createAmazonBedrock({ region: 'us-east-1', accessKeyId: ACCESS_KEY_ID, secretAccessKey: SECRET_ACCESS_KEY, fetch })
    ]
  }
  const weather = tool({ description: 'Weather for a city', inputSchema: z.object({ city: z.string() }), execute: async ({ city }) => `21 degrees in ${city}` })
  for (const provider of providers(new laneway.Router(emu.routerOptions()))) {
    const called = await generateText({ model: provider(SONNET), prompt: 'Weather in Paris?', tools: { weather }, toolChoice: { type: 'tool', toolName: 'weather' }, maxRetries: 0 })
    assert.equal(called.toolCalls[0].toolName, 'weather')
    assert.equal(called.toolResults[0].output, `21 degrees in ${called.toolCalls[0].input.city}`)
    // The Bedrock provider asks Claude for Anthropic's own output_config, which Sonnet 4.5
    // refuses (the emulator, as Bedrock): Sonnet 4.6 takes it.
    const { object } = await generateObject({ model: provider('anthropic.claude-sonnet-4-6'), schema: z.object({ city: z.string() }), prompt: 'Capital of France?', maxRetries: 0 })
    assert.equal(typeof object.city, 'string')
  }
  for (const provider of providers(new laneway.Router(stormy.routerOptions()))) {
    await inStorm(() => assert.rejects(generateText({ model: provider(LITE), prompt: 'x', maxRetries: 0 }), e => APICallError.isInstance(e) && e.statusCode === 429))
  }
})

test('the OpenAI Agents SDK for JS on a real OpenAI client over laneway.fetch', async () => {
  const { Agent, run, setDefaultOpenAIClient, setTracingDisabled, OpenAIResponsesModel } = require('@openai/agents')
  const OpenAI = require('openai')
  setTracingDisabled(true)
  const router = new laneway.Router(emu.routerOptions())
  const client = new OpenAI({ baseURL: 'http://laneway.invalid/v1', apiKey: 'unused', maxRetries: 0, fetch: laneway.fetch(router) })
  setDefaultOpenAIClient(client)
  const agent = new Agent({ name: 'a', instructions: 'Be brief.', model: SONNET })
  const result = await run(agent, 'Say hello.')
  assert.ok(result.finalOutput)
  const { OpenAIChatCompletionsModel } = require('@openai/agents')
  const onChat = new Agent({ name: 'b', instructions: 'Be brief.', model: new OpenAIChatCompletionsModel(client, LITE) })
  assert.ok((await run(onChat, 'Say hello.')).finalOutput)
  const streamed = await run(agent, 'Tell me a story.', { stream: true })
  let events = 0
  for await (const _ of streamed) events++ // eslint-disable-line no-unused-vars
  await streamed.completed
  assert.ok(events > 5 && streamed.finalOutput)
  // A tool loop: the first turn must call the tool, its result goes back, the next answers.
  const { tool } = require('@openai/agents')
  const { z } = require('zod')
  const called = []
  const lookup = tool({ name: 'lookup_city', description: 'Weather for a city', parameters: z.object({ city: z.string() }), execute: async ({ city }) => { called.push(city); return `21 degrees in ${city}` } })
  const looping = new Agent({ name: 'c', instructions: 'Use the tool.', model: SONNET, tools: [lookup], modelSettings: { toolChoice: 'required' } })
  const looped = await run(looping, 'Weather in Paris?', { maxTurns: 4 })
  assert.ok(called.length >= 1 && looped.finalOutput)
  // A throttle storm: the openai SDK's own error.
  const stormClient = require('../openai').client(new laneway.Router(stormy.routerOptions()))
  const throttled = new Agent({ name: 'd', model: new OpenAIResponsesModel(stormClient, LITE) })
  await inStorm(() => assert.rejects(run(throttled, 'x'), e => e instanceof OpenAI.RateLimitError))
})
