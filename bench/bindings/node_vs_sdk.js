'use strict'
// Laneway's Node binding against @aws-sdk/client-bedrock-runtime (Converse), against the same
// emulator in the same run: `bench/bindings/run.sh`. Run it under `taskset -c 0` so that the
// client has one core; the emulator is pinned to CPU 1. Both call the same model, pinned (as
// issue 16's method does); Laneway still plans (SLO tier, targets, state) and measures.
// Sequential: one call at a time; concurrent: 64 in flight. Then the memory of 1,000 open streams.
const path = require('node:path')
const { execFileSync } = require('node:child_process')
const { BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand } = require('@aws-sdk/client-bedrock-runtime')
const { NodeHttpHandler } = require('@smithy/node-http-handler')
const http = require('node:http')
const laneway = require('laneway')

const MODEL = 'amazon.nova-lite-v1:0'
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
// Calls made by each contender before any row is measured, so that V8 has optimised both
// (a service's process is warm); without it the rows measured first carry the SDK's warm-up.
const WARMUP = Number(process.env.LANEWAY_BENCH_WARMUP || 2000)

/** The official Rust SDK alone (`core/examples/raw_sdk_floor.rs`), which Laneway calls
 * through, on the same core and emulator: the floor under any client built on it. */
function floor (url, streaming, tokens, n, width) {
  const binary = process.env.LANEWAY_FLOOR || path.join(__dirname, '..', '..', 'target', 'release', 'examples', 'raw_sdk_floor')
  try {
    return Number(execFileSync('taskset', ['-c', '0', binary, url, streaming ? 'stream' : 'generate', String(tokens), String(n), String(width)], { encoding: 'utf8' }).trim())
  } catch { return null }
}

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
    const input = (i, tokens) => ({ modelId: MODEL, messages: [{ role: 'user', content: [{ text: PROMPT(i) }] }], inferenceConfig: { maxTokens: tokens } })
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
      const r = await router.generate(PROMPT(i), { model: MODEL, maxTokens: tokens })
      if (!r.text) throw new Error('empty')
    }
    const lanewayStream = tokens => async i => {
      let deltas = 0
      for await (const ev of router.stream(PROMPT(i), { model: MODEL, maxTokens: tokens })) if (ev.type === 'text_delta') deltas++
      if (!deltas) throw new Error('empty')
    }
    for (const [generate, stream] of [[sdkGenerate, sdkStream], [lanewayGenerate, lanewayStream]]) {
      await pool(WARMUP, 16, generate(16))
      await pool(Math.ceil(WARMUP / 4), 16, stream(64))
    }
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
          const floors = []
          for (let round = 0; round < ROUNDS; round++) floors.push(floor(emu.url, streaming, tokens, n, width))
          rows.push({ mode: streaming ? 'stream' : 'generate', tokens, inFlight: width, calls: n, sdkCpuUs: median(theirs.map(x => x[1])), lanewayCpuUs: median(ours.map(x => x[1])), rustSdkCpuUs: floors.includes(null) ? null : median(floors) })
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
    console.log('| call | output tokens | in flight | SDK CPU/call | Laneway CPU/call | SDK / Laneway | Rust SDK alone | SDK / Rust SDK alone |')
    console.log('|---|---|---|---|---|---|---|---|')
    const us = v => `${Math.round(v).toLocaleString('en')} us`
    for (const r of rows) {
      const floorCols = r.rustSdkCpuUs ? `${us(r.rustSdkCpuUs)} | ${(r.sdkCpuUs / r.rustSdkCpuUs).toFixed(1)}x` : ' | '
      console.log(`| ${r.mode} | ${r.tokens} | ${r.inFlight} | ${us(r.sdkCpuUs)} | ${us(r.lanewayCpuUs)} | **${(r.sdkCpuUs / r.lanewayCpuUs).toFixed(1)}x** | ${floorCols} |`)
    }
    console.log(`1,000 open Laneway streams: +${grownMb.toFixed(1)} MB RSS (${(grownMb * 1024 / 1000).toFixed(1)} KB per stream)`)
    console.log(JSON.stringify({ rows, streams1000Mb: grownMb }))
  } finally { await emu.stop() }
}

main().catch(e => { console.error(e); process.exit(1) })
