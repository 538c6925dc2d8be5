'use strict'
// Faults in one region of three with the defaults a user gets (no time limit configured): a
// stalled region costs a call about a second (its learnt limit, or a hedge after its first
// target's usual first-token time), not the standard class's 30-second ceiling, and is then
// ejected; a fresh router meeting the fault on its first call pays seconds too (its limits and
// hedges start from the model's latency prior); expired credentials fail every call at once,
// typed.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const laneway = require('..')
const { startEmulator } = require('../testing')

const CALLS = 40
const IN_FLIGHT = 8
const MODEL = 'amazon.nova-lite-v1:0' // three regions, us-east-1 first

// One call's answer, streamed to its end or not.
async function answer (router, i, streamed) {
  const prompt = `Request ${i}: a short paragraph on reliable systems.`
  const options = { model: MODEL, maxTokens: 200, slo: 'standard' }
  if (!streamed) return router.generate(prompt, options)
  // A stream broken after delivering text goes on from that text elsewhere.
  for await (const ev of router.stream(prompt, { ...options, continueOnInterrupt: true })) {
    if (ev.type === 'completed') return ev.response
  }
  throw new Error('a stream ended without its response')
}

// `n` standard-class calls, IN_FLIGHT at once, streamed or not: { answer | error, ms } each,
// in start order.
async function calls (router, n = CALLS, streamed = false) {
  const results = new Array(n)
  let next = 0
  async function worker () {
    while (next < n) {
      const i = next++
      const started = performance.now()
      try {
        results[i] = { answer: await answer(router, i, streamed), ms: performance.now() - started }
      } catch (error) {
        results[i] = { error, ms: performance.now() - started }
      }
    }
  }
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker))
  return results
}

// Whether a call paid the fault: an attempt failed in us-east-1, or a hedge answered for its
// attempt there (not a hedge between healthy regions once us-east-1 was ejected).
function paidTheFault (d) {
  if (d.failedAttempts.some(f => f.region === 'us-east-1')) return true
  const eastEjected = d.reasons.some(r => r.reason === 'target_demoted' && r.region === 'us-east-1' && r.health === 'region_ejected')
  return !eastEjected && Boolean(d.hedge && d.hedge.hedge_won)
}

const p99 = ms => [...ms].sort((a, b) => a - b)[Math.max(0, Math.ceil(ms.length * 0.99) - 1)]

test('a stalled region costs seconds, not the class ceiling, and is ejected', async () => {
  const emu = await startEmulator({ scenario: 'fast' })
  try {
    const router = new laneway.Router(emu.routerOptions())
    const warm = await calls(router)
    assert.ok(warm.every(r => r.answer), 'the warm-up failed')
    const faultFree = p99(warm.map(r => r.ms))
    await emu.addFault({ kind: 'stall', region: 'us-east-1' })
    const results = await calls(router)
    assert.deepEqual(results.filter(r => r.error).map(r => String(r.error)), [])
    const slowest = Math.max(...results.map(r => r.ms))
    assert.ok(slowest <= faultFree + 5000, `slowest ${slowest} ms, fault-free p99 ${faultFree} ms`)
    const paid = results.filter(({ answer: { decision: d } }) => paidTheFault(d))
    assert.ok(paid.length <= IN_FLIGHT, `${paid.length} calls paid the stall`)
    assert.ok(results.slice(-IN_FLIGHT).every(r => r.answer.decision.region !== 'us-east-1'))
  } finally { await emu.stop() }
})

test('a fresh router meeting a stall on its first call pays seconds, not the class ceiling', async () => {
  // No warm-up: the fault is there from the first call (a process start, a deploy). The
  // prior's hedge (Nova Lite's p99, at most the standard tier's 2.5 s) and its idle limit
  // bound the calls, not the class's 30 s.
  const hedgeAfter = 2500
  const emu = await startEmulator({ scenario: 'fast' })
  try {
    const baseline = await calls(new laneway.Router(emu.routerOptions()))
    assert.ok(baseline.every(r => r.answer), 'the fault-free calls failed')
    const faultFree = p99(baseline.map(r => r.ms))
    for (const [fault, streamed] of [
      [{ kind: 'stall_after_headers', region: 'us-east-1' }, false],
      [{ kind: 'trickle', region: 'us-east-1', after_tokens: 20 }, true]
    ]) {
      const router = new laneway.Router(emu.routerOptions())
      await emu.addFault(fault)
      const results = await calls(router, CALLS, streamed)
      await emu.clearFaults()
      assert.deepEqual(results.filter(r => r.error).map(r => String(r.error)), [], fault.kind)
      const slowest = Math.max(...results.map(r => r.ms))
      assert.ok(slowest <= faultFree + hedgeAfter + 5000, `${fault.kind}: slowest ${slowest} ms, fault-free p99 ${faultFree} ms`)
      assert.ok(slowest < 30000, `${fault.kind}: ${slowest} ms`)
    }
  } finally { await emu.stop() }
})

test('expired credentials fail every call at once, typed', async () => {
  const emu = await startEmulator({ scenario: 'fast' })
  try {
    await emu.addFault({ kind: 'expired_token' })
    const router = new laneway.Router(emu.routerOptions())
    for (const { error, ms } of await calls(router, 16)) {
      assert.ok(error instanceof laneway.AuthenticationError, String(error))
      assert.equal(error.code, 'ExpiredTokenException')
      // No retry rounds until the 60 s deadline: at once.
      assert.ok(ms < 5000, `${ms} ms`)
    }
  } finally { await emu.stop() }
})
