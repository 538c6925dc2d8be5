'use strict'
// A surge from Node: bursts of short calls on the emulator's `startup` scenario (Nova Micro: 64
// concurrent requests per region and target, about 220 ms to the first token), N in flight,
// through Laneway (the built-in `nova` family, standard class, no configuration) and through
// the AWS SDK for JavaScript's BedrockRuntimeClient (Converse on Nova Micro in us-east-1, its
// standard and adaptive retry modes), in the same run: `bench/surge/run.sh`. Each row: a fresh
// emulator and client, then the burst; for Laneway a second burst on the same router (warm).
const http = require('node:http')
const { BedrockRuntimeClient, ConverseCommand } = require('@aws-sdk/client-bedrock-runtime')
const { NodeHttpHandler } = require('@smithy/node-http-handler')
const laneway = require('laneway')
const { startEmulator, ACCESS_KEY_ID, SECRET_ACCESS_KEY } = require('laneway/testing')

const CALLS = Number(process.env.LANEWAY_SURGE_CALLS || 2000)
const WIDTHS = (process.env.LANEWAY_SURGE_WIDTHS || '128,256,512,1024').split(',').map(Number)
const SCENARIO = process.env.LANEWAY_SURGE_SCENARIO || 'startup'
const MAX_TOKENS = 64
const MODEL = 'amazon.nova-micro-v1:0'
const PROMPT = i => `Call ${i}: in one sentence, what is a surge?`

async function burst (width, call) {
  const latencies = []
  const lost = new Map()
  let next = 0
  const cpu = process.cpuUsage()
  const started = process.hrtime.bigint()
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < CALLS) {
      const i = next++
      const t = process.hrtime.bigint()
      try {
        await call(i)
        latencies.push(Number(process.hrtime.bigint() - t) / 1e6)
      } catch (e) {
        const why = e.kind || e.name || 'error'
        lost.set(why, (lost.get(why) || 0) + 1)
      }
    }
  }))
  const wall = Number(process.hrtime.bigint() - started) / 1e9
  const used = process.cpuUsage(cpu)
  return { latencies, lost, wall, cpuMs: (used.user + used.system) / 1e3 }
}

function row (name, { latencies, lost, wall, cpuMs }) {
  latencies.sort((a, b) => a - b)
  const n = latencies.length
  const p = q => n ? latencies[Math.min(n - 1, Math.floor(q * n))].toFixed(0) : 'nan'
  const lostN = [...lost.values()].reduce((a, b) => a + b, 0)
  const why = [...lost.entries()].sort((a, b) => b[1] - a[1]).slice(0, 3).map(([k, v]) => `${k} ${v}`).join(', ') || '-'
  console.log(`| ${name} | ${n}/${CALLS} | ${lostN} (${why}) | ${wall.toFixed(1)} | ${(n / wall).toFixed(0)} | ${p(0.5)} | ${p(0.99)} | ${(cpuMs / CALLS).toFixed(2)} |`)
}

async function withEmulator (f) {
  const emu = await startEmulator({ scenario: SCENARIO })
  try { return await f(emu) } finally { await emu.stop() }
}

async function main () {
  console.log(`\nA burst of ${CALLS} calls (max_tokens ${MAX_TOKENS}) from Node on the \`${SCENARIO}\` scenario, N in flight\n`)
  console.log('| client, N in flight | answered | lost (why) | wall s | answered/s | p50 ms | p99 ms | client CPU ms/call |')
  console.log('|---|---|---|---|---|---|---|---|')
  for (const width of WIDTHS) {
    await withEmulator(async emu => {
      const router = new laneway.Router(emu.routerOptions())
      const call = i => router.generate(PROMPT(i), { family: 'nova', slo: 'standard', maxTokens: MAX_TOKENS })
      row(`Laneway, ${width}, fresh`, await burst(width, call))
      row(`Laneway, ${width}, warm`, await burst(width, call))
    })
    for (const retryMode of ['standard', 'adaptive']) {
      await withEmulator(async emu => {
        const sdk = new BedrockRuntimeClient({
          region: 'us-east-1',
          endpoint: emu.url,
          credentials: { accessKeyId: ACCESS_KEY_ID, secretAccessKey: SECRET_ACCESS_KEY },
          retryMode,
          requestHandler: new NodeHttpHandler({ httpAgent: new http.Agent({ keepAlive: true, maxSockets: width }) })
        })
        const call = i => sdk.send(new ConverseCommand({ modelId: MODEL, messages: [{ role: 'user', content: [{ text: PROMPT(i) }] }], inferenceConfig: { maxTokens: MAX_TOKENS } }))
        row(`AWS SDK ${retryMode}, ${width}`, await burst(width, call))
      })
    }
  }
}

main().catch(e => { console.error(e); process.exit(1) })
