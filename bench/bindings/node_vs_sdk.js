'use strict'
// Laneway's Node binding against @aws-sdk/client-bedrock-runtime (Converse), against the same
// emulator in the same run: `bench/bindings/run.sh`. Run it under `taskset -c 0` so that the
// client has one core; the emulator is pinned to CPU 1. Laneway runs its full plan (a family
// routed by the classifier, SLO tier, targets, state); the SDK calls the model directly.
// Sequential: one call at a time; concurrent: 64 in flight. Then the memory of 1,000 open streams.
const path = require('node:path')
const { execFileSync } = require('node:child_process')
const { BedrockRuntimeClient, ConverseCommand } = require('@aws-sdk/client-bedrock-runtime')
const { NodeHttpHandler } = require('@smithy/node-http-handler')
const http = require('node:http')
const laneway = require('laneway')
const { startEmulator, ACCESS_KEY_ID, SECRET_ACCESS_KEY } = require('laneway/testing')

const SEQUENTIAL = Number(process.env.LANEWAY_BENCH_SEQUENTIAL || 1500)
const CONCURRENT = Number(process.env.LANEWAY_BENCH_CONCURRENT || 4000)
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
    const sdkCall = async i => {
      const out = await sdk.send(new ConverseCommand({ modelId: 'amazon.nova-lite-v1:0', messages: [{ role: 'user', content: [{ text: PROMPT(i) }] }], inferenceConfig: { maxTokens: 16 } }))
      if (!out.output.message.content[0].text) throw new Error('empty')
    }
    const lanewayCall = async i => {
      const r = await router.generate(PROMPT(i), { family: 'nova', maxTokens: 16 })
      if (!r.text) throw new Error('empty')
    }
    await sdkCall(0); await lanewayCall(0)
    const results = { 'SDK sequential': [], 'laneway sequential': [], 'SDK concurrent (64 in flight)': [], 'laneway concurrent (64 in flight)': [] }
    for (let round = 0; round < ROUNDS; round++) {
      results['SDK sequential'].push(await measured(SEQUENTIAL, () => pool(SEQUENTIAL, 1, sdkCall)))
      results['laneway sequential'].push(await measured(SEQUENTIAL, () => pool(SEQUENTIAL, 1, lanewayCall)))
      results['SDK concurrent (64 in flight)'].push(await measured(CONCURRENT, () => pool(CONCURRENT, 64, sdkCall)))
      results['laneway concurrent (64 in flight)'].push(await measured(CONCURRENT, () => pool(CONCURRENT, 64, lanewayCall)))
    }
    // Memory of 1,000 streams held open at once, each past its first event.
    global.gc && global.gc()
    const before = process.memoryUsage().rss
    const streams = Array.from({ length: 1000 }, (_, i) => router.stream(PROMPT(i), { family: 'nova', maxTokens: 16 }))
    await Promise.all(streams.map(s => s.next()))
    const grownMb = (process.memoryUsage().rss - before) / 1024 / 1024
    await Promise.all(streams.map(s => s.return()))

    const out = {}
    for (const [k, v] of Object.entries(results)) out[k] = { reqPerS: median(v.map(x => x[0])), cpuUsPerReq: median(v.map(x => x[1])) }
    console.log(`Node ${process.version}, @aws-sdk/client-bedrock-runtime ${require('@aws-sdk/client-bedrock-runtime/package.json').version}, laneway ${laneway.version()}; client pinned to one core; medians of ${ROUNDS} rounds`)
    for (const [k, v] of Object.entries(out)) console.log(`  ${k.padEnd(36)} ${v.reqPerS.toFixed(0).padStart(8)} req/s   ${v.cpuUsPerReq.toFixed(0).padStart(7)} us client CPU/req   ${(1e6 / v.cpuUsPerReq).toFixed(0).padStart(7)} req per CPU-second`)
    for (const [mode, ours, theirs] of [['sequential', 'laneway sequential', 'SDK sequential'], ['concurrent', 'laneway concurrent (64 in flight)', 'SDK concurrent (64 in flight)']]) {
      console.log(`  ${mode}: Laneway / SDK = ${(out[ours].reqPerS / out[theirs].reqPerS).toFixed(1)}x requests per second, ${(out[theirs].cpuUsPerReq / out[ours].cpuUsPerReq).toFixed(1)}x requests per CPU-second`)
    }
    console.log(`  1,000 open Laneway streams: +${grownMb.toFixed(1)} MB RSS (${(grownMb * 1024 / 1000).toFixed(1)} KB per stream)`)
    console.log(JSON.stringify({ results: out, streams1000Mb: grownMb }))
  } finally { await emu.stop() }
}

main().catch(e => { console.error(e); process.exit(1) })
