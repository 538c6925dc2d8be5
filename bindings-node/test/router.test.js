'use strict'
// The Node API against the emulator: the same cases as the Python suite.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const laneway = require('..')
const { startEmulator } = require('../testing')

let emu, router
before(async () => {
  emu = await startEmulator({ scenario: 'fast' })
  router = new laneway.Router(emu.routerOptions())
})
after(async () => { await emu.stop() })

// Asks `condition` (a round trip to the emulator each time) until it holds; bounded by tries,
// not by a clock.
async function until (what, condition, tries = 5000) {
  for (let i = 0; i < tries; i++) if (await condition()) return
  assert.fail(`${what}: never happened`)
}

test('generate returns a typed response', async () => {
  const r = await router.generate('Summarise the refund policy', { family: 'nova', slo: 'background', maxTokens: 24 })
  assert.ok(r instanceof laneway.Response)
  assert.ok(r.text.length > 0 && r.usage.outputTokens > 0 && r.usage.inputTokens > 0)
  assert.ok(r.costUsd > 0)
  assert.equal(r.decision.family, 'nova')
  assert.equal(r.decision.tier, 'flex')
  assert.ok(r.timings.totalMs > 0)
  assert.equal(r.toJSON().decision.model, r.decision.model)
  assert.ok(r.decision.reasons.some(x => x.reason === 'tier_from_slo'))
})

test('requests as objects and in the core shape', async () => {
  let r = await router.generate({ messages: [{ role: 'user', text: 'Hello' }, { role: 'assistant', text: 'Hi!' }, { role: 'user', text: 'More' }], model: 'amazon.nova-lite-v1:0', maxTokens: 8, slo: 'interactive', ttftTargetMs: 2000 })
  assert.equal(r.decision.model, 'amazon.nova-lite-v1:0')
  r = await router.generate({ messages: [{ role: 'user', content: [{ text: 'Hi' }] }], model: { family: 'nova' }, inference: { max_tokens: 8 } })
  assert.equal(r.decision.family, 'nova')
})

test('stream yields deltas then the response', async () => {
  const deltas = []
  let completed
  for await (const ev of router.stream('Tell me a story', { family: 'nova', maxTokens: 20 })) {
    if (ev.type === 'text_delta') deltas.push(ev.text)
    if (ev.type === 'completed') completed = ev.response
  }
  assert.ok(deltas.length > 1)
  assert.equal(completed.text, deltas.join(''))
  assert.ok(completed.timings.ttftMs !== null)
  const plan = router.plan('Hello', { family: 'claude', slo: 'interactive' })
  assert.equal(plan.attempts[0].tier, 'priority')
})

test('a router from an object and from a TOML file', async () => {
  const config = { families: { small: { variants: ['amazon.nova-micro-v1:0', 'amazon.nova-lite-v1:0'], default_variant: 'amazon.nova-micro-v1:0' } } }
  let r = await new laneway.Router({ config, ...emu.routerOptions() }).generate('Hi', { family: 'small', maxTokens: 4 })
  assert.equal(r.decision.model, 'amazon.nova-micro-v1:0')
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'laneway-')), 'laneway.toml')
  fs.writeFileSync(file, '[families.small]\nvariants = ["amazon.nova-micro-v1:0"]\n')
  r = await new laneway.Router({ configPath: file, ...emu.routerOptions() }).generate('Hi', { family: 'small', maxTokens: 4 })
  assert.equal(r.decision.model, 'amazon.nova-micro-v1:0')
})

test('bad configuration and requests are typed errors', async () => {
  assert.throws(() => new laneway.Router({ config: '[families.x]\nvariants = ["no-such-model"]\n', ...emu.routerOptions() }), e => e instanceof laneway.ConfigError && e.kind === 'config' && e.message.includes('families.x.variants'))
  await assert.rejects(router.generate('Hi', { family: 'no-such-family' }), e => e instanceof laneway.InvalidRequestError && e instanceof laneway.LanewayError && e.message.includes('no-such-family'))
  await assert.rejects(router.generate({ messages: [], model: { family: 'nova' } }), laneway.InvalidRequestError)
  await assert.rejects(router.generate({ messages: 'nope', model: { family: 'nova' } }), laneway.InvalidRequestError)
})

test('service errors map to their classes', async () => {
  await emu.addFault({ kind: 'outage', model: 'amazon.nova-pro-v1:0' })
  // The outage outlasts the calls: their retry rounds end at the deadline.
  await assert.rejects(router.generate('Hi', { model: 'amazon.nova-pro-v1:0', maxTokens: 4, deadlineMs: 300 }), e => {
    assert.ok(e instanceof laneway.AllTargetsFailedError)
    assert.equal(e.kind, 'all_targets_failed')
    assert.ok(e.attempts.length >= 2 && e.attempts[0].kind === 'unavailable')
    assert.ok(e.cause instanceof Error)
    return true
  })
  await assert.rejects(router.generate('Hi', { model: 'amazon.nova-pro-v1:0', maxTokens: 4, residency: { regions: ['us-east-1'] }, deadlineMs: 300 }), e => e instanceof laneway.UnavailableError && e.kind === 'unavailable' && e.code === 'ServiceUnavailableException' && e.region === 'us-east-1')
})

test('a broken stream says how much was delivered', async () => {
  await emu.addFault({ kind: 'break_stream', model: 'amazon.nova-micro-v1:0', after_tokens: 3 })
  const got = []
  await assert.rejects(async () => {
    for await (const ev of router.stream('Tell me a long story', { model: 'amazon.nova-micro-v1:0', maxTokens: 40 })) got.push(ev)
  }, e => e instanceof laneway.StreamInterruptedError && e.delivered.deltas === 3 && got.filter(g => g.type === 'text_delta').length === 3)
})

test('an AbortSignal cancels the request', async () => {
  const slow = await startEmulator({ scenario: 'startup', timeScale: 3.0 })
  try {
    const r = new laneway.Router(slow.routerOptions())
    const ctl = new AbortController()
    // Interactive with a TTFT target: runs as a stream, which the emulator watches.
    const call = r.generate('Write an essay', { model: 'amazon.nova-pro-v1:0', maxTokens: 400, slo: 'interactive', ttftTargetMs: 5000, signal: ctl.signal })
    let rows = []
    const sum = k => rows.reduce((s, x) => s + x[k], 0)
    // Aborted once the emulator has the request (a 400-token answer at a third of real speed
    // takes seconds); then asked until it has seen the stream cancelled. No timers.
    await until('the request reached the emulator', async () => { rows = await slow.counters(); return sum('requests') >= 1 })
    ctl.abort()
    await assert.rejects(call, e => e instanceof laneway.AbortError && e.name === 'AbortError')
    await until('the emulator saw the stream cancelled', async () => { rows = await slow.counters(); return sum('cancelled') >= 1 })
    assert.ok(sum('requests') >= 1 && sum('cancelled') === sum('requests'))

    const ctl2 = new AbortController()
    await assert.rejects(async () => {
      for await (const ev of r.stream('Another essay', { model: 'amazon.nova-lite-v1:0', maxTokens: 400, signal: ctl2.signal })) {
        if (ev.type === 'text_delta') ctl2.abort()
      }
    }, laneway.AbortError)
    await until('the emulator saw the second stream cancelled', async () => { rows = await slow.counters(); return sum('cancelled') >= 2 })
    assert.ok(sum('requests') >= 2 && sum('cancelled') === sum('requests'))
    await assert.rejects(r.generate('x', { signal: AbortSignal.abort() }), laneway.AbortError)
  } finally { await slow.stop() }
})

test('a thousand concurrent requests', async () => {
  const many = await startEmulator({ scenario: path.join(__dirname, 'many.toml') })
  try {
    const r = new laneway.Router(many.routerOptions())
    // Several bursts at the defaults: completions racing the event loop must never be lost.
    let sent = 0
    for (let round = 1; round <= 3; round++) {
      const results = await Promise.all(Array.from({ length: 1000 }, (_, i) => r.generate(`Question ${i}`, { model: 'amazon.nova-lite-v1:0', maxTokens: 4 })))
      assert.equal(results.length, 1000)
      assert.ok(results.every(x => x.text.length > 0))
      sent += results.reduce((s, x) => s + x.decision.attemptsSent, 0)
      // Every call answered once; a hedge's loser may have finished too.
      const ok = (await many.counters()).reduce((s, x) => s + x.ok, 0)
      assert.ok(ok >= 1000 * round && ok <= sent, `${ok} answers for ${1000 * round} calls, ${sent} attempts sent`)
    }
  } finally { await many.stop() }
})

test('aborting while an event is pending cancels the stream at once', async () => {
  const slow = await startEmulator({ scenario: 'startup', timeScale: 3.0 })
  try {
    const r = new laneway.Router(slow.routerOptions())
    const ctl = new AbortController()
    let rows = []
    const sum = k => rows.reduce((s, x) => s + x[k], 0)
    // The first token is slow at this time scale: the abort comes while the first event is
    // still pending, as soon as the emulator has the request.
    const stream = r.stream('An essay', { model: 'amazon.nova-pro-v1:0', maxTokens: 400, signal: ctl.signal })
    const reading = assert.rejects(async () => {
      for await (const ev of stream) assert.fail(`no event expected, got ${ev.type}`)
    }, laneway.AbortError)
    await until('the request reached the emulator', async () => { rows = await slow.counters(); return sum('requests') >= 1 })
    ctl.abort()
    await reading
    await until('the emulator saw the stream cancelled', async () => { rows = await slow.counters(); return sum('cancelled') >= 1 })
    assert.equal(sum('requests'), 1)
    assert.equal(sum('cancelled'), 1)
  } finally { await slow.stop() }
})

for (const [fault, Class] of [['throttle', 'ThrottledError'], ['model_not_ready', 'ModelNotReadyError'], ['internal_error', 'ServiceInternalError'], ['outage', 'UnavailableError']]) {
  test(`a ${fault} fault is a ${Class}`, async () => {
    const own = await startEmulator({ scenario: 'fast' })
    try {
      await own.addFault({ kind: fault, model: 'amazon.nova-micro-v1:0', region: 'us-east-1' })
      const r = new laneway.Router(own.routerOptions())
      // One target only (a region list allows no profile): its own error comes back.
      // The fault outlasts the call: its retry rounds end at this deadline.
      await assert.rejects(r.generate('Hi', { model: 'amazon.nova-micro-v1:0', residency: { regions: ['us-east-1'] }, maxTokens: 4, deadlineMs: 300 }),
        e => e instanceof laneway[Class] && e instanceof laneway.LanewayError && e.region === 'us-east-1' && e.target === 'amazon.nova-micro-v1:0')
    } finally { await own.stop() }
  })
}

test('refusals have their classes', async () => {
  await assert.rejects(new laneway.Router({ ...emu.routerOptions(), secretAccessKey: 'not-the-secret' }).generate('Hi', { model: 'amazon.nova-lite-v1:0', maxTokens: 4 }),
    e => e instanceof laneway.AuthenticationError && e.kind === 'authentication' && e.httpStatus === 403)
  const config = '[models."amazon.titan-text-express-v1"]\nprovider = "bedrock"\nregions = ["us-east-1"]\nprice = { input_per_1k = 0.0002, output_per_1k = 0.0006 }\n'
  await assert.rejects(new laneway.Router({ config, ...emu.routerOptions() }).generate('Hi', { model: 'amazon.titan-text-express-v1', maxTokens: 4 }),
    e => e instanceof laneway.ValidationError && e.kind === 'validation' && e.code === 'ValidationException')
})

test('metrics and task costs', async () => {
  const r = new laneway.Router(emu.routerOptions())
  for (let i = 0; i < 3; i++) await r.generate(`Step ${i}`, { family: 'nova', maxTokens: 8, taskId: 't1', slo: 'interactive', ttftTargetMs: 5000 })
  assert.equal(r.finishTask('t1', true), true)
  assert.equal(r.finishTask('t1', true), false)
  const m = r.metrics()
  assert.equal(m.lanes.reduce((s, [, lane]) => s + lane.requests, 0), 3)
  assert.equal(m.tasks.tasks, 1)
  assert.ok(m.tasks.cost_usd > 0)
  assert.equal(m.slo.interactive.ttft_targeted, 3)
  assert.ok(r.prometheus().includes('gen_ai_client_operation_duration_seconds'))
})

test('feedback reaches the family router', async () => {
  // An emulator of its own: the shared one keeps other tests' faults on Nova's variants.
  const own = await startEmulator({ scenario: 'fast' })
  try { await feedbackReachesTheFamilyRouter(new laneway.Router(own.routerOptions())) } finally { await own.stop() }
})

async function feedbackReachesTheFamilyRouter (r) {
  const answer = await r.generate('Extract the city from: Ana lives in Lisbon.', { family: 'nova', maxTokens: 8 })
  const callId = answer.decision.callId
  assert.ok(callId.startsWith('lw1:') && callId.endsWith(`nova/${answer.decision.model}`))
  r.feedback(callId, false)
  const cells = r.feedbackReport().nova
  assert.deepEqual(cells.map(c => [c.kind, c.outcomes.total.reduce((a, b) => a + b), c.outcomes.good.reduce((a, b) => a + b)]), [['extract', 1, 0]])
  await r.generate('Explain tides briefly.', { family: 'nova', maxTokens: 8, taskId: 'learn' })
  assert.equal(r.finishTask('learn', true), true)
  assert.deepEqual(r.feedbackReport().nova.map(c => c.kind).sort(), ['explain', 'extract'])
  assert.throws(() => r.feedback('not-a-call-id', true), e => e instanceof laneway.InvalidRequestError && e.message.includes('call_id'))
  // The id of a call that named its model: no family router chose it.
  assert.throws(() => r.feedback('lw1:0123456789abcdef:-:/amazon.nova-pro-v1:0', true), e => e instanceof laneway.InvalidRequestError && e.message.includes('no policy learns'))
}

test('a panic in any entry point is a LanewayInternalError, never an abort', async () => {
  const internal = where => e => e instanceof laneway.LanewayInternalError && e.kind === 'laneway_internal' && e.message.includes(`failpoint ${where}`)
  try {
    laneway._armFailpoint('plan')
    assert.throws(() => router.plan('Hi', { family: 'nova' }), internal('plan'))
    laneway._armFailpoint('generate')
    await assert.rejects(router.generate('Hi', { family: 'nova', maxTokens: 4 }), internal('generate'))
    laneway._armFailpoint('feedback')
    assert.throws(() => router.feedback('lw1:0123456789abcdef:general.0:nova/amazon.nova-lite-v1:0', true), internal('feedback'))
    laneway._armFailpoint('stream_event')
    await assert.rejects(async () => {
      for await (const ev of router.stream('Hi', { family: 'nova', maxTokens: 4 })) assert.ok(ev)
    }, internal('stream_event'))
  } finally { laneway._armFailpoint(null) }
  const r = await router.generate('Hi', { family: 'nova', maxTokens: 4 })
  assert.ok(r.text.length > 0)
})

test('a stream dropped unfinished is closed when it is collected', async () => {
  require('node:v8').setFlagsFromString('--expose-gc')
  const gc = require('node:vm').runInNewContext('gc')
  // Real time: a 400-token answer takes seconds, so the stream is still open when dropped.
  const slow = await startEmulator({ scenario: 'startup' })
  try {
    const r = new laneway.Router(slow.routerOptions())
    await (async () => {
      const events = r.stream('An essay', { model: 'amazon.nova-lite-v1:0', maxTokens: 400 })
      const first = await events.next()
      assert.ok(!first.done)
    })() // dropped here without return()
    const cancelled = async () => (await slow.counters()).reduce((s, x) => s + x.cancelled, 0)
    // No timer: collect, let the finalizer run (a turn of the event loop), and ask the emulator
    // (a round trip) until it has seen the connection close; bounded.
    for (let i = 0; i < 2000 && (await cancelled()) === 0; i++) {
      gc()
      await new Promise(resolve => setImmediate(resolve))
    }
    assert.equal(await cancelled(), 1)
  } finally { await slow.stop() }
})

test('the JavaScript SDK\'s Converse input works unchanged', async () => {
  const input = {
    modelId: 'amazon.nova-lite-v1:0',
    system: [{ text: 'You book trips.' }],
    messages: [
      { role: 'user', content: [{ text: 'Weather in Paris?' }, { image: { format: 'png', source: { bytes: new Uint8Array([137, 80, 78, 71]) } } }, { document: { format: 'pdf', name: 'Itinerary (draft)', source: { bytes: new TextEncoder().encode('%PDF-1.7 trip') } } }] },
      { role: 'assistant', content: [{ toolUse: { toolUseId: 't1', name: 'weather', input: { city: 'Paris' } } }] },
      { role: 'user', content: [{ toolResult: { toolUseId: 't1', content: [{ json: { celsius: 21 } }], status: 'success' } }] }
    ],
    toolConfig: { tools: [{ toolSpec: { name: 'weather', description: 'Weather for a city', inputSchema: { json: { type: 'object' } } } }] },
    inferenceConfig: { maxTokens: 16 }
  }
  const out = await router.converse({ ...input, laneway: { slo: { class: 'interactive' } } })
  assert.equal(out.output.message.role, 'assistant')
  assert.ok(out.output.message.content[0].text.length > 0)
  const u = out.usage
  assert.equal(u.totalTokens, u.inputTokens + u.outputTokens + u.cacheReadInputTokens + u.cacheWriteInputTokens)
  assert.equal(out.laneway.decision.model, 'amazon.nova-lite-v1:0')
  assert.ok(out.laneway.cost_usd > 0)
  await assert.rejects(router.converse({ ...input, promptVariables: { city: { text: 'Paris' } } }),
    e => e instanceof laneway.InvalidRequestError && e.kind === 'invalid_request' && e.field === 'promptVariables' && e.code === null)
  const named = { ...input, messages: [{ role: 'user', content: [{ document: { format: 'txt', name: 'notes.txt', source: { bytes: new Uint8Array([120]) } } }] }] }
  await assert.rejects(router.converse(named), e => e instanceof laneway.InvalidRequestError && e.field === 'messages[0].content[0].document.name')
})

test('the whole request surface in camelCase: system blocks, tools, tool choice', async () => {
  const r = await router.generate({
    model: 'amazon.nova-lite-v1:0',
    system: [{ text: 'Be brief.' }, { cache_point: {} }],
    messages: [{ role: 'user', content: [{ text: 'Which tool?' }, { image: { format: 'png', bytes: new Uint8Array([137, 80, 78, 71]) } }, { document: { format: 'md', name: 'notes', bytes: new TextEncoder().encode('# notes') } }] }],
    tools: [{ name: 'lookup', description: 'Looks up', inputSchema: { type: 'object' } }],
    toolChoice: 'auto',
    maxTokens: 8
  })
  assert.equal(r.decision.model, 'amazon.nova-lite-v1:0')
  await assert.rejects(router.generate('Hi', { maxTokenz: 8 }), e => e instanceof laneway.InvalidRequestError && e.field === 'maxTokenz' && e.message.includes('maxTokens'))
})

test('a config path that does not exist is an error', () => {
  assert.throws(() => new laneway.Router({ config: path.join(os.tmpdir(), 'no-such-laneway.toml'), ...emu.routerOptions() }),
    e => e instanceof laneway.ConfigError && e.message.includes('no-such-laneway.toml'))
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'laneway-')), 'laneway.toml')
  fs.writeFileSync(file, '[routing]\nmax_attempts = 2\n')
  assert.ok(new laneway.Router({ config: file, ...emu.routerOptions() }))
  assert.ok(new laneway.Router({ configPath: file, ...emu.routerOptions() }))
  assert.throws(() => new laneway.Router({ endpoint: 'x' }), e => e instanceof laneway.ConfigError && e.message.includes('endpoint'))
})

test('a thinking agent\'s Converse input works unchanged, its signed reasoning going back', async () => {
  const SONNET = 'anthropic.claude-sonnet-4-5-20250929-v1:0'
  const first = [{ role: 'user', content: [{ text: 'Weather in Paris?' }] }]
  const input = {
    modelId: SONNET,
    inferenceConfig: { maxTokens: 4000 },
    toolConfig: { tools: [{ toolSpec: { name: 'weather', inputSchema: { json: { type: 'object' } } } }] },
    additionalModelRequestFields: { thinking: { type: 'enabled', budget_tokens: 2048 } }
  }
  const out = await router.converse({ ...input, messages: first })
  const reasoning = out.output.message.content[0]
  assert.ok(reasoning.reasoningContent.reasoningText.signature)
  const turn = { role: 'assistant', content: [reasoning, { toolUse: { toolUseId: 't1', name: 'weather', input: { city: 'Paris' } } }] }
  const result = { role: 'user', content: [{ toolResult: { toolUseId: 't1', content: [{ json: { c: 21 } }] } }] }
  const again = await router.converse({ ...input, messages: [...first, turn, result] })
  assert.ok(again.output.message.content.at(-1).text.length > 0)
  assert.ok(again.laneway.decision.reasons.some(r => r.reason === 'reasoning_mapped'))
  const tampered = structuredClone(turn)
  tampered.content[0].reasoningContent.reasoningText.text += ' (edited)'
  await assert.rejects(router.converse({ ...input, messages: [...first, tampered, result] }),
    e => e instanceof laneway.ValidationError && /Invalid signature in thinking block/.test(e.message))
  const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false }
  const structured = await router.generate('Trip as JSON', { model: SONNET, outputSchema: schema, metadata: { team: 'travel' } })
  assert.equal(typeof JSON.parse(structured.text).city, 'string')
})

test('reasoning streams as its own event kind, with both first-token times', async () => {
  const kinds = []
  let done
  for await (const ev of router.stream('Why?', { model: 'anthropic.claude-sonnet-4-5-20250929-v1:0', maxTokens: 4000, reasoning: { effort: 'low' } })) {
    kinds.push(ev.type)
    if (ev.type === 'completed') done = ev.response
  }
  assert.equal(kinds[0], 'reasoning_delta')
  assert.ok(kinds.includes('text_delta'))
  assert.ok(done.reasoningText.length > 0)
  assert.ok(done.timings.ttftReasoningMs <= done.timings.ttftAnswerMs)
})

test('a guardrailed Converse input works unchanged: blocked, then masked, with the trace', async () => {
  const guardrailConfig = { guardrailIdentifier: 'lanewaydemo1', guardrailVersion: '1', trace: 'enabled' }
  const out = await router.converse({ modelId: 'amazon.nova-lite-v1:0', guardrailConfig, messages: [{ role: 'user', content: [{ text: 'About the cactus' }] }] })
  assert.equal(out.stopReason, 'guardrail_intervened')
  assert.equal(out.output.message.content[0].text, 'Sorry, I cannot talk about that.')
  assert.equal(out.trace.guardrail.inputAssessment.lanewaydemo1.wordPolicy.customWords[0].match, 'cactus')
  const plain = await router.generate('Echo: mail jane@example.com', { model: 'amazon.nova-lite-v1:0' })
  assert.equal(plain.text, 'mail jane@example.com', 'no guardrail, no mask')
  const masked = await router.generate('Echo: mail jane@example.com', { model: 'amazon.nova-lite-v1:0', guardrail: { identifier: 'lanewaydemo1', version: '1', trace: 'enabled' } })
  assert.equal(masked.text, 'mail {EMAIL}')
  assert.equal(masked.stopReason, 'guardrail_intervened')
  assert.deepEqual(masked.toJSON().guardrail_trace.modelOutput, ['mail jane@example.com'])
})

test('the JavaScript SDK straight at the emulator and through Laneway give the same shapes: thinking, structured output, guardrails', async () => {
  const { BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand } = require('@aws-sdk/client-bedrock-runtime')
  // An emulator of its own: the faults other tests add stay out of this one.
  const own = await startEmulator({ scenario: 'fast' })
  const o = own.routerOptions()
  const router = new laneway.Router(o)
  const sdk = new BedrockRuntimeClient({ region: 'us-east-1', endpoint: o.endpointUrl, credentials: { accessKeyId: o.accessKeyId, secretAccessKey: o.secretAccessKey }, maxAttempts: 1 })
  const SONNET = 'anthropic.claude-sonnet-4-5-20250929-v1:0'
  const thinking = { additionalModelRequestFields: { thinking: { type: 'enabled', budget_tokens: 2048 } }, inferenceConfig: { maxTokens: 4000 } }
  const first = [{ role: 'user', content: [{ text: 'Plan a trip' }] }]
  for (const [send, modelId] of [[input => sdk.send(new ConverseCommand(input)), 'us.' + SONNET], [input => router.converse(input), SONNET]]) {
    const out = await send({ modelId, messages: first, ...thinking })
    const reasoning = out.output.message.content[0].reasoningContent.reasoningText
    assert.ok(reasoning.text.length > 0 && reasoning.signature.length > 0)
    const next = [...first, { role: 'assistant', content: [{ reasoningContent: { reasoningText: reasoning } }, { text: 'Here' }] }, { role: 'user', content: [{ text: 'Go on' }] }]
    const again = await send({ modelId, messages: next, ...thinking })
    assert.ok(again.output.message.content.some(b => b.text))
    const schema = JSON.stringify({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false })
    const structured = await send({ modelId, messages: first, outputConfig: { textFormat: { type: 'json_schema', structure: { jsonSchema: { schema } } } } })
    assert.equal(typeof JSON.parse(structured.output.message.content[0].text).city, 'string')
    const guarded = await send({ modelId: 'amazon.nova-lite-v1:0', messages: [{ role: 'user', content: [{ text: 'About the cactus' }] }], guardrailConfig: { guardrailIdentifier: 'lanewaydemo1', guardrailVersion: '1', trace: 'enabled' } })
    assert.equal(guarded.stopReason, 'guardrail_intervened')
    assert.equal(guarded.trace.guardrail.inputAssessment.lanewaydemo1.wordPolicy.customWords[0].match, 'cactus')
  }
  // The SDK's own stream decoder sees reasoning deltas and their signature.
  const { stream } = await sdk.send(new ConverseStreamCommand({ modelId: 'us.' + SONNET, messages: first, ...thinking }))
  let reasoning = ''; let signature = ''
  for await (const ev of stream) {
    const r = ev.contentBlockDelta?.delta?.reasoningContent
    if (r?.text) reasoning += r.text
    if (r?.signature) signature = r.signature
  }
  assert.ok(reasoning.length > 0 && signature.length > 0)
  sdk.destroy()
  await own.stop()
})

test('a call that cannot get a slot in time is overloaded', async () => {
  // One slot on the one target these calls may use (Nova Micro's own id in us-east-1, about
  // 220 ms an answer in the `startup` world, expected here, by the prior this configuration
  // gives it, to take a second): the calls beyond it would wait about a second each in line,
  // past their 1.5 s deadline once served, so they are refused at once, typed.
  const startup = await startEmulator({ scenario: 'startup' })
  try {
    const config = '[models."amazon.nova-micro-v1:0"]\nquota = { max_concurrency = 1 }\nlatency = { tiers = { standard = { ttft = 1000 } } }\n'
    const r = new laneway.Router({ config, ...startup.routerOptions() })
    const ask = i => r.generate(`Call ${i}`, { model: 'amazon.nova-micro-v1:0', maxTokens: 4, residency: { regions: ['us-east-1'] }, deadlineMs: 1500 })
    const results = await Promise.allSettled([0, 1, 2, 3].map(ask))
    const refused = results.filter(x => x.status === 'rejected').map(x => x.reason)
    assert.equal(results.filter(x => x.status === 'fulfilled').length, 1, String(refused))
    assert.equal(refused.length, 3)
    for (const e of refused) {
      assert.ok(e instanceof laneway.OverloadedError && e instanceof laneway.LanewayError, String(e))
      assert.equal(e.kind, 'overloaded')
      assert.ok(e.waitedMs < 100, String(e.waitedMs))
      assert.ok(e.waitNeededMs + 1000 >= e.waitAllowedMs && e.message.includes(`${Math.floor(e.waitNeededMs)} ms`), e.message)
    }
  } finally {
    await startup.stop()
  }
})
