'use strict'
// The example scenario in Node: an interactive chat turn, a background summary, a
// family-routed request and a stream, against the emulator (no AWS account).
//
//   npm install ./bindings-node && node examples/node/scenario.js
const laneway = require('laneway')
const { startEmulator } = require('laneway/testing')

const config = {
  // The Nova family picks its variant per request with the built-in complexity classifier.
  families: { nova: { variants: ['amazon.nova-micro-v1:0', 'amazon.nova-lite-v1:0', 'amazon.nova-pro-v1:0'], router: { max_strong_share: 0.3 } } }
}

function show (label, r) {
  const d = r.decision
  console.log(`${label.padEnd(18)} ${d.model} in ${d.region} at tier ${d.tier}: ${r.usage.outputTokens} tokens, $${r.costUsd.toFixed(6)}`)
}

async function main () {
  const emu = await startEmulator({ scenario: 'startup', timeScale: 0.2 })
  try {
    const router = new laneway.Router({ config, ...emu.routerOptions() })
    show('interactive chat', await router.generate('Where is my order #1234?', { family: 'nova', slo: 'interactive', ttftTargetMs: 800, maxTokens: 60 }))
    show('background summary', await router.generate("Summarise this week's support tickets.", { family: 'nova', slo: 'background', maxTokens: 120 }))
    const hard = await router.generate('Prove that the square root of 2 is irrational, step by step.', { family: 'nova', maxTokens: 120 })
    show('family-routed', hard)
    for (const reason of hard.decision.reasons) {
      if (reason.reason === 'variant_scored') console.log('  classifier:', reason.scores.map(([v, loss, t]) => `${v} loss ${loss.toFixed(3)} (threshold ${t.toFixed(3)})`).join(', '))
    }
    process.stdout.write('stream:            ')
    for await (const ev of router.stream('Tell me a short story about a lighthouse.', { family: 'nova', maxTokens: 40 })) {
      if (ev.type === 'text_delta') process.stdout.write(ev.text)
      if (ev.type === 'completed') console.log(`\n  TTFT ${ev.response.timings.ttftMs.toFixed(0)} ms, ${ev.response.usage.outputTokens} tokens`)
    }
  } finally { await emu.stop() }
}

main().catch(e => { console.error(e); process.exit(1) })
