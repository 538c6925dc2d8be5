'use strict'
// Laneway's Node binding against @aws-sdk/client-bedrock-runtime (Converse), against the same
// emulator in the same run: `bench/bindings/run.sh`. Run it under `taskset -c 0` so that the
// client has one core; the emulator is pinned to CPU 1. Laneway runs its full plan (a family
// routed by the classifier, SLO tier, targets, state); the SDK calls the model directly.
// Sequential: one call at a time; concurrent: 64 in flight. Then the memory of 1,000 open streams.
const path = require('node:path')
const { execFileSync } = require('node:child_process')
const { BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand } = require('@aws-sdk/client-bedrock-runtime')
const { NodeHttpHandler } = require('@smithy/node-http-handler')
const http = require('node:http')
const laneway = require('laneway')
const { startEmulator, ACCESS_KEY_ID, SECRET_ACCESS_KEY } = require('laneway/testing')

const ROUNDS = Number(process.env.LANEWAY_BENCH_ROUNDS || 3)
const PROMPT = i => `Summarise ticket ${i}: the invoice was charged twice and the customer wants a refund.`
// Converse against Converse: Laneway's generate sends a stream by default (routing.stream_generate).
const config = { families: { nova: { variants: ['amazon.nova-micro-v1:0', 'amazon.nova-lite-v1:0', 'amazon.nova-pro-v1:0'], router: { max_strong_share: 0.3 } } }, routing: { stream_generate: false } }

async function measured (n, run) {
  const cpu = process.cpuUsage()
  const start = process.hrtime.bigint()
  await run()
  const wall = Number(process.hrtime.bigint() - start) / 1e9
  const used = process.cpuUsage(cpu)
  return [n / wall, (used.user + used.system) / n]
}

async function pool (n, width, call) {
  let next = 0
  await Promise.all(Array.from({ length: width }, async () => { while (next < n) await call(next++) }))
}

const median = v => v.slice().sort((a, b) => a - b)[Math.floor(v.length / 2)]

// The per-call rows of issue 16: generate and stream at 16, 64 and 512 output tokens, one call
// at a time and 64 in flight; calls per row shrink with the answer's length.
const TOKENS = (process.env.LANEWAY_BENCH_TOKENS || '16,64,512').split(',').map(Number)
const CALLS_PER_ROW = Number(process.env.LANEWAY_BENCH_CALLS || 6400)
// 'generate', 'stream' or both (the default).
const CALLS = (process.env.LANEWAY_BENCH_ONLY || 'generate,stream').split(',')
const callsFor = tokens => Math.max(64, Math.floor(CALLS_PER_ROW / tokens))

async function main () {
  const binary = process.env.LANEWAY_EMULATOR || path.join(__dirname, '..', '..', 'target', 'release', 'laneway-emulator')
  process.env.LANEWAY_EMULATOR = binary
  const emu = await startEmulator({ scenario: path.join(__dirname, 'scenario.toml') })
  try {
    execFileSync('taskset', ['-pc', '1', String(emu.pid)], { stdio: 'ignore' })
    const router = new laneway.Router({ config, ...emu.routerOptions() })
    const sdk = new BedrockRuntimeClient({
      region: 'us-east-1',
      endpoint: emu.url,
      credentials: { accessKeyId: ACCESS_KEY_ID, secretAccessKey: SECRET_ACCESS_KEY },
      maxAttempts: 1,
      requestHandler: new NodeHttpHandler({ httpAgent: new http.Agent({ keepAlive: true, maxSockets: 64 }) })
    })
    const input = (i, tokens) => ({ modelId: 'amazon.nova-lite-v1:0', messages: [{ role: 'user', content: [{ text: PROMPT(i) }] }], inferenceConfig: { maxTokens: tokens } })
    const sdkGenerate = tokens => async i => {
      const out = await sdk.send(new ConverseCommand(input(i, tokens)))
      if (!out.output.message.content[0].text) throw new Error('empty')
    }
    const sdkStream = tokens => async i => {
      const out = await sdk.send(new ConverseStreamCommand(input(i, tokens)))
      let deltas = 0
      for await (const ev of out.stream) if (ev.contentBlockDelta) deltas++
      if (!deltas) throw new Error('empty')
    }
    const lanewayGenerate = tokens => async i => {
      const r = await router.generate(PROMPT(i), { family: 'nova', maxTokens: tokens })
      if (!r.text) throw new Error('empty')
    }
    const lanewayStream = tokens => async i => {
      let deltas = 0
      for await (const ev of router.stream(PROMPT(i), { family: 'nova', maxTokens: tokens })) if (ev.type === 'text_delta') deltas++
      if (!deltas) throw new Error('empty')
    }
    await sdkGenerate(16)(0); await sdkStream(16)(0); await lanewayGenerate(16)(0); await lanewayStream(16)(0)
    const rows = []
    for (const streaming of CALLS.map(kind => kind === 'stream')) {
      for (const tokens of TOKENS) {
        for (const width of [1, 64]) {
          const n = callsFor(tokens)
          const theirs = []; const ours = []
          for (let round = 0; round < ROUNDS; round++) {
            theirs.push(await measured(n, () => pool(n, width, (streaming ? sdkStream : sdkGenerate)(tokens))))
            ours.push(await measured(n, () => pool(n, width, (streaming ? lanewayStream : lanewayGenerate)(tokens))))
          }
          rows.push({ mode: streaming ? 'stream' : 'generate', tokens, inFlight: width, calls: n, sdkCpuUs: median(theirs.map(x => x[1])), lanewayCpuUs: median(ours.map(x => x[1])) })
        }
      }
    }
    // Memory of 1,000 streams held open at once, each past its first event.
    global.gc && global.gc()
    const before = process.memoryUsage().rss
    const streams = Array.from({ length: 1000 }, (_, i) => router.stream(PROMPT(i), { family: 'nova', maxTokens: 16 }))
    await Promise.all(streams.map(s => s.next()))
    const grownMb = (process.memoryUsage().rss - before) / 1024 / 1024
    await Promise.all(streams.map(s => s.return()))

    console.log(`Node ${process.version}, @aws-sdk/client-bedrock-runtime ${require('@aws-sdk/client-bedrock-runtime/package.json').version}, laneway ${laneway.version()}; client pinned to one core; client CPU per call, medians of ${ROUNDS} rounds`)
    console.log('| call | output tokens | in flight | SDK CPU/call | Laneway CPU/call | SDK / Laneway |')
    console.log('|---|---|---|---|---|---|')
    for (const r of rows) console.log(`| ${r.mode} | ${r.tokens} | ${r.inFlight} | ${Math.round(r.sdkCpuUs).toLocaleString('en')} us | ${Math.round(r.lanewayCpuUs).toLocaleString('en')} us | **${(r.sdkCpuUs / r.lanewayCpuUs).toFixed(1)}x** |`)
    console.log(`1,000 open Laneway streams: +${grownMb.toFixed(1)} MB RSS (${(grownMb * 1024 / 1000).toFixed(1)} KB per stream)`)
    console.log(JSON.stringify({ rows, streams1000Mb: grownMb }))
  } finally { await emu.stop() }
}

main().catch(e => { console.error(e); process.exit(1) })
