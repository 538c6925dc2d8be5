'use strict'
// The Node seams (issue 46): the official SDKs with Laneway below them, against the same SDKs
// calling the emulator directly, in the same run: the AWS SDK for JavaScript's
// BedrockRuntimeClient on `laneway.requestHandler`, and the `openai` SDK on `laneway.fetch`
// (`require('laneway/openai').client`), beside Laneway's own `laneway/openai` client.
// `bench/bindings/run.sh` runs it under `taskset -c 0`; the emulator is pinned to CPU 1. The
// SDK's own parsing stays on both sides. Sequential calls, streams read to their end; client
// CPU per call. With `LANEWAY_LITELLM` naming a `litellm` executable, the `openai` SDK calling
// Nova through a LiteLLM proxy (pinned to CPU 1) is measured too, the proxy's CPU (its whole
// process tree) counted with the client's.
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { execFileSync, spawn } = require('node:child_process')
const { BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand } = require('@aws-sdk/client-bedrock-runtime')
const OpenAI = require('openai')
const laneway = require('laneway')
const lanewayOpenAI = require('laneway/openai')
const { startEmulator, ACCESS_KEY_ID, SECRET_ACCESS_KEY } = require('laneway/testing')

const NOVA = 'amazon.nova-lite-v1:0'
const GPT = 'openai.gpt-5.6-terra'
const SDK_GPT = 'global.openai.gpt-5.6-terra'
const PROMPT = i => `Summarise ticket ${i}: the invoice was charged twice and the customer wants a refund.`
const ROUNDS = Number(process.env.LANEWAY_BENCH_ROUNDS || 3)
const TOKENS = (process.env.LANEWAY_BENCH_TOKENS || '64,512').split(',').map(Number)
const CALLS = Number(process.env.LANEWAY_BENCH_CALLS || 1600)
const WARMUP = Number(process.env.LANEWAY_BENCH_WARMUP || 300)
const config = { routing: { stream_generate: false } }

const KEY = 'sk-laneway-bench-0123456789abcdef0123456789'
const TICK = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim())

/** CPU seconds of process `root` and its descendants so far (user and system). */
function treeCpu (root) {
  const parents = new Map()
  const times = new Map()
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    let stat
    try { stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8') } catch { continue }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    parents.set(Number(entry), Number(fields[1]))
    times.set(Number(entry), (Number(fields[11]) + Number(fields[12])) / TICK)
  }
  let total = 0
  const stack = [root]
  while (stack.length) {
    const pid = stack.pop()
    total += times.get(pid) || 0
    for (const [p, parent] of parents) if (parent === pid) stack.push(p)
  }
  return total
}

/** A LiteLLM proxy serving Nova from the emulator (no retries of its own), pinned to CPU 1. */
async function litellmProxy (binary, emu) {
  const config = path.join(os.tmpdir(), 'laneway-bench-litellm-node.yaml')
  fs.writeFileSync(config, `model_list:
  - model_name: nova
    litellm_params:
      model: bedrock/converse/${NOVA}
      aws_access_key_id: ${ACCESS_KEY_ID}
      aws_secret_access_key: ${SECRET_ACCESS_KEY}
      aws_region_name: us-east-1
      aws_bedrock_runtime_endpoint: ${emu.url}
general_settings:
  master_key: ${KEY}
litellm_settings:
  num_retries: 0
`)
  const proc = spawn('taskset', ['-c', '1', binary, '--config', config, '--host', '127.0.0.1', '--port', '4418', '--num_workers', '1'], { stdio: 'ignore' })
  for (let i = 0; i < 240; i++) {
    try {
      const r = await fetch('http://127.0.0.1:4418/health/liveliness')
      if (r.ok) return proc
    } catch {}
    await new Promise(resolve => setTimeout(resolve, 500))
  }
  proc.kill()
  throw new Error('the LiteLLM proxy did not start')
}

async function measured (n, run) {
  const cpu = process.cpuUsage()
  await run()
  const used = process.cpuUsage(cpu)
  return (used.user + used.system) / n
}

const median = v => v.slice().sort((a, b) => a - b)[Math.floor(v.length / 2)]

async function converse (client, i, tokens, stream) {
  const input = { modelId: NOVA, messages: [{ role: 'user', content: [{ text: PROMPT(i) }] }], inferenceConfig: { maxTokens: tokens } }
  if (!stream) {
    const out = await client.send(new ConverseCommand(input))
    if (!out.output.message.content[0].text) throw new Error('no text')
    return
  }
  const out = await client.send(new ConverseStreamCommand(input))
  let n = 0
  for await (const event of out.stream) if (event.contentBlockDelta) n += (event.contentBlockDelta.delta.text || '').length
  if (!n) throw new Error('no text')
}

async function chat (client, model, i, tokens, stream) {
  const body = { model, messages: [{ role: 'user', content: PROMPT(i) }], max_completion_tokens: tokens }
  if (!stream) {
    const r = await client.chat.completions.create(body)
    if (!r.choices[0].message.content) throw new Error('no text')
    return
  }
  let n = 0
  for await (const chunk of await client.chat.completions.create({ ...body, stream: true })) {
    if (chunk.choices && chunk.choices.length) n += (chunk.choices[0].delta.content || '').length
  }
  if (!n) throw new Error('no text')
}

async function main () {
  const binary = process.env.LANEWAY_EMULATOR || path.join(__dirname, '..', '..', 'target', 'release', 'laneway-emulator')
  const emu = await startEmulator({ scenario: path.join(__dirname, 'scenario.toml'), binary })
  try {
    try { execFileSync('taskset', ['-pc', '1', String(emu.pid)], { stdio: 'ignore' }) } catch {}
    const router = new laneway.Router({ config, ...emu.routerOptions() })
    const credentials = { accessKeyId: ACCESS_KEY_ID, secretAccessKey: SECRET_ACCESS_KEY }
    const direct = new BedrockRuntimeClient({ region: 'us-east-1', endpoint: emu.url, credentials, maxAttempts: 1 })
    const seam = new BedrockRuntimeClient({ region: 'us-east-1', credentials, maxAttempts: 1, requestHandler: laneway.requestHandler(router) })
    const key = await emu.bedrockApiKey('us-east-1')
    const directOpenAI = new OpenAI({ baseURL: `${emu.url}/openai/v1`, apiKey: key, maxRetries: 0 })
    const seamOpenAI = lanewayOpenAI.client(router)
    const lookalike = new lanewayOpenAI.OpenAI({ router })
    const proxy = process.env.LANEWAY_LITELLM ? await litellmProxy(process.env.LANEWAY_LITELLM, emu) : null
    const sides = {
      converse: [['AWS SDK direct', (i, t, s) => converse(direct, i, t, s)],
        ['AWS SDK on laneway.requestHandler', (i, t, s) => converse(seam, i, t, s)]],
      chat: [['openai direct', (i, t, s) => chat(directOpenAI, SDK_GPT, i, t, s)],
        ['openai on laneway.fetch', (i, t, s) => chat(seamOpenAI, GPT, i, t, s)],
        ['laneway/openai OpenAI', (i, t, s) => chat(lookalike, GPT, i, t, s)]]
    }
    if (proxy) {
      const viaGateway = new OpenAI({ baseURL: 'http://127.0.0.1:4418/v1', apiKey: KEY, maxRetries: 0 })
      sides.gateway = [['openai via LiteLLM proxy (client + proxy)', (i, t, s) => chat(viaGateway, 'nova', i, t, s)],
        ['openai on laneway.fetch', (i, t, s) => chat(seamOpenAI, NOVA, i, t, s)]]
    }
    for (const group of Object.values(sides)) {
      for (const [, call] of group) for (let i = 0; i < WARMUP; i++) await call(i, 16, i % 2 === 1)
    }
    const rows = []
    for (const [api, group] of Object.entries(sides)) {
      for (const stream of [false, true]) {
        for (const tokens of TOKENS) {
          const n = Math.max(32, Math.floor(CALLS / tokens))
          const figures = Object.fromEntries(group.map(([name]) => [name, []]))
          for (let r = 0; r < ROUNDS; r++) {
            for (const [name, call] of group) {
              const before = proxy && name.includes('LiteLLM') ? treeCpu(proxy.pid) : null
              let cost = await measured(n, async () => { for (let i = 0; i < n; i++) await call(i, tokens, stream) })
              if (before !== null) cost += (treeCpu(proxy.pid) - before) * 1e6 / n
              figures[name].push(cost)
            }
          }
          rows.push([api, stream ? 'stream' : 'whole', tokens, n, Object.fromEntries(Object.entries(figures).map(([k, v]) => [k, median(v)]))])
        }
      }
    }
    console.log(`Node ${process.version}, openai ${require('openai/version').VERSION}; client pinned to one core; client CPU per call (ms), medians of ${ROUNDS} rounds`)
    for (const [api, group] of Object.entries(sides)) {
      const names = group.map(([name]) => name)
      console.log()
      console.log(`| answer | output tokens | calls | ${names.join(' | ')} | ${names[1]} / ${names[0]} |`)
      console.log('|---|---|---|' + '---|'.repeat(names.length) + '---|')
      for (const [a, mode, tokens, n, f] of rows) {
        if (a !== api) continue
        console.log(`| ${mode} | ${tokens} | ${n} | ${names.map(k => (f[k] / 1000).toFixed(2)).join(' | ')} | ${(f[names[1]] / f[names[0]]).toFixed(2)}x |`)
      }
    }
    if (proxy) proxy.kill()
  } finally { await emu.stop() }
}

main().catch(e => { console.error(e); process.exit(1) })
