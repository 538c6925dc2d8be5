'use strict'
// The JavaScript agent frameworks, unmodified, on Laneway through the official clients' seams
// (`laneway.fetch`, `laneway.requestHandler`), at the versions pinned in package.json: a call,
// a stream, a tool call where the framework has tools. The emulator stands for AWS.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const laneway = require('..')
const { startEmulator, ACCESS_KEY_ID, SECRET_ACCESS_KEY } = require('../testing')

const LITE = 'amazon.nova-lite-v1:0'
const SONNET = 'anthropic.claude-sonnet-4-5-20250929-v1:0'
let emu
before(async () => { emu = await startEmulator({ scenario: 'fast' }) })
after(async () => { await emu.stop() })
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
  const called = await withTool.invoke('Weather in Paris?')
  assert.equal(called.tool_calls[0].name, 'weather')
  assert.ok(called.tool_calls[0].args.city)
})

test('LangChain JS: ChatOpenAI on laneway.fetch', async () => {
  const { ChatOpenAI } = require('@langchain/openai')
  const router = new laneway.Router(emu.routerOptions())
  const llm = new ChatOpenAI({ model: LITE, apiKey: 'unused', maxRetries: 0, configuration: { baseURL: 'http://laneway.invalid/v1', fetch: laneway.fetch(router) } })
  assert.ok((await llm.invoke('Say hello.')).content)
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
})
