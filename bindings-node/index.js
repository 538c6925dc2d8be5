'use strict'
// The `laneway` package: converts JavaScript values to the Rust core's JSON shapes and back.
// Every routing decision is made by the core (the native addon).

const native = require('./laneway.node')

/** Every error Laneway throws; `code` is the stable error kind (e.g. 'throttled'). */
class LanewayError extends Error {
  constructor (details, options) {
    super(details.message, options)
    this.name = this.constructor.name
    this.code = details.kind
    for (const [k, v] of Object.entries(details)) {
      if (k !== 'message' && k !== 'kind') this[k] = v
    }
  }
}

const KINDS = {
  throttled: 'ThrottledError',
  unavailable: 'UnavailableError',
  model_not_ready: 'ModelNotReadyError',
  timeout: 'TargetTimeoutError',
  internal: 'ServiceInternalError',
  transport: 'TransportError',
  model_error: 'ModelError',
  validation: 'ValidationError',
  access_denied: 'AccessDeniedError',
  not_found: 'NotFoundError',
  quota_exceeded: 'QuotaExceededError',
  stream_interrupted: 'StreamInterruptedError',
  all_targets_failed: 'AllTargetsFailedError',
  config: 'ConfigError',
  invalid_request: 'InvalidRequestError',
  internal_error: 'LanewayInternalError',
  aborted: 'AbortError'
}
const errors = { LanewayError }
for (const name of new Set(Object.values(KINDS))) {
  errors[name] = { [name]: class extends LanewayError {} }[name]
}

function convertError (e) {
  if (!(e instanceof Error) || typeof e.message !== 'string' || !e.message.startsWith('{')) return e
  let details
  try { details = JSON.parse(e.message) } catch { return e }
  const Class = errors[KINDS[details.kind]] || LanewayError
  return new Class(details, { cause: e })
}

function tomlValue (v) {
  if (typeof v === 'boolean' || typeof v === 'number') return String(v)
  if (typeof v === 'string') return JSON.stringify(v)
  if (Array.isArray(v)) return '[' + v.map(tomlValue).join(', ') + ']'
  if (v && typeof v === 'object') return '{ ' + Object.entries(v).map(([k, x]) => `${JSON.stringify(k)} = ${tomlValue(x)}`).join(', ') + ' }'
  throw new TypeError(`cannot put ${typeof v} in a configuration`)
}

/** A request in the core's shape, from a prompt string with options or a request object. */
function toRequest (request, options = {}) {
  const r = typeof request === 'string' ? { ...options, prompt: request } : { ...request }
  if (r.model && typeof r.model === 'object') return r // already in the core's shape
  if (r.model && r.family) throw new errors.InvalidRequestError({ kind: 'invalid_request', message: 'invalid request: model: give a model or a family, not both' })
  const messages = (r.messages || []).map(m => (m.content ? m : { role: m.role, content: [{ text: m.text }] }))
  if (r.prompt !== undefined) messages.push({ role: 'user', content: [{ text: r.prompt }] })
  const out = { messages }
  if (r.model) out.model = { model: r.model }
  else if (r.family) out.model = { family: r.family }
  if (r.system) out.system = [{ text: r.system }]
  const inference = {}
  if (r.maxTokens !== undefined) inference.max_tokens = r.maxTokens
  if (r.temperature !== undefined) inference.temperature = r.temperature
  if (r.topP !== undefined) inference.top_p = r.topP
  if (r.stopSequences) inference.stop_sequences = r.stopSequences
  if (Object.keys(inference).length) out.inference = inference
  const slo = {}
  if (r.slo) slo.class = r.slo
  if (r.ttftTargetMs !== undefined) slo.ttft_target = r.ttftTargetMs
  if (r.deadlineMs !== undefined) slo.deadline = r.deadlineMs
  if (Object.keys(slo).length) out.slo = slo
  if (r.taskId) out.task_id = r.taskId
  if (r.tier) out.tier = r.tier
  if (r.residency) out.residency = r.residency
  if (r.minVariant) out.min_variant = r.minVariant
  if (r.cache) out.cache = r.cache
  if (r.continueOnInterrupt) out.continue_on_interrupt = true
  return out
}

const seconds = d => (d == null ? null : d.secs + d.nanos / 1e9)

/** The answer to a call. */
class Response {
  constructor (d) { this._d = d }
  /** All text blocks, concatenated. */
  get text () { return this._d.content.filter(b => 'text' in b).map(b => b.text).join('') }
  get toolUses () { return this._d.content.filter(b => 'tool_use' in b).map(b => b.tool_use) }
  get stopReason () { return this._d.stop_reason }
  get usage () {
    const u = this._d.usage
    return { inputTokens: u.input_tokens, outputTokens: u.output_tokens, cacheReadTokens: u.cache_read_tokens, cacheWriteTokens: u.cache_write_tokens }
  }
  get timings () {
    const t = this._d.timings
    return { ttftMs: t.ttft ? seconds(t.ttft) * 1000 : null, totalMs: seconds(t.total) * 1000, outputTokensPerSecond: t.output_tokens_per_second }
  }
  get decision () {
    const d = this._d.decision
    return { model: d.model, family: d.family, target: d.target, region: d.region, tier: d.tier, endpoint: d.endpoint, invokedModel: d.invoked_model, reasons: d.reasons, failedAttempts: d.failed_attempts, attemptsSent: d.attempts_sent, hedge: d.hedge }
  }
  /** What the call cost, from the price book, in US dollars. */
  get costUsd () { return this._d.cost_usd }
  get cacheSavingsUsd () { return this._d.cache_savings_usd }
  toJSON () { return this._d }
}

function event (d) {
  const [type, data] = Object.entries(d)[0]
  const ev = { type, data }
  if (type === 'text_delta') ev.text = data.text
  if (type === 'completed') ev.response = new Response(data)
  return ev
}

let nextCallId = 1

function abortError (signal) {
  return new errors.AbortError({ kind: 'aborted', message: 'the call was aborted' }, { cause: signal && signal.reason })
}

/** A native call, its errors converted. */
function call (f) {
  try { return f() } catch (e) { throw convertError(e) }
}

// Streams dropped before their end: closed when collected (the native side cancels the call).
const abandoned = new FinalizationRegistry(({ native, id }) => {
  try { native.closeStream(id) } catch {}
})

async function * streamEvents (native, id, signal) {
  const onAbort = () => call(() => native.closeStream(id))
  if (signal) signal.addEventListener('abort', onAbort, { once: true })
  try {
    while (true) {
      if (signal && signal.aborted) throw abortError(signal)
      let ev
      try {
        ev = await native.nextEvent(id)
      } catch (e) { throw convertError(e) }
      if (ev == null) {
        if (signal && signal.aborted) throw abortError(signal)
        return
      }
      yield event(JSON.parse(ev))
    }
  } finally {
    if (signal) signal.removeEventListener('abort', onAbort)
    call(() => native.closeStream(id))
  }
}

/** Routes calls per their SLO. */
class Router {
  /**
   * @param {object} [options] `config` (an object in the TOML layout, TOML text, or `configPath`),
   *   `endpointUrl` (the emulator), `accessKeyId` / `secretAccessKey`.
   */
  constructor (options = {}) {
    const o = {}
    if (options.config !== undefined) o.configToml = typeof options.config === 'string' ? options.config : Object.entries(options.config).map(([k, v]) => `${JSON.stringify(k)} = ${tomlValue(v)}`).join('\n') + '\n'
    if (options.configPath !== undefined) o.configPath = options.configPath
    if (options.endpointUrl !== undefined) o.endpointUrl = options.endpointUrl
    if (options.accessKeyId !== undefined) o.accessKeyId = options.accessKeyId
    if (options.secretAccessKey !== undefined) o.secretAccessKey = options.secretAccessKey
    try {
      this._n = new native.NativeRouter(JSON.stringify(o))
    } catch (e) { throw convertError(e) }
  }

  /** Sends a request; `{ signal }` cancels it. Resolves to a `Response`. */
  async generate (request, options = {}) {
    const { signal, ...rest } = options
    const json = JSON.stringify(toRequest(request, rest))
    if (signal && signal.aborted) throw abortError(signal)
    const id = nextCallId++
    const onAbort = () => this._n.cancel(id)
    if (signal) signal.addEventListener('abort', onAbort, { once: true })
    try {
      return new Response(JSON.parse(await this._n.generate(json, id)))
    } catch (e) {
      const err = convertError(e)
      if (err.code === 'aborted') throw abortError(signal)
      throw err
    } finally {
      if (signal) signal.removeEventListener('abort', onAbort)
    }
  }

  /** Streams the answer: `for await (const ev of router.stream(req))`; `{ signal }` cancels it.
   * A stream dropped unfinished is closed when it is garbage-collected (its request cancelled,
   * its connection and reservation released). */
  stream (request, options = {}) {
    const { signal, ...rest } = options
    let id
    try {
      id = this._n.openStream(JSON.stringify(toRequest(request, rest)))
    } catch (e) {
      return (async function * () { throw convertError(e) })()
    }
    const events = streamEvents(this._n, id, signal)
    abandoned.register(events, { native: this._n, id }, events)
    return events
  }

  /** The plan for a request, without sending it. */
  plan (request, options = {}) {
    try {
      return JSON.parse(this._n.plan(JSON.stringify(toRequest(request, options))))
    } catch (e) { throw convertError(e) }
  }

  /** Everything measured so far: per-lane latency percentiles (seconds), tokens, cost, errors,
   * failovers and hedges; SLO attainment per class; calls in flight; task costs. */
  metrics () { return JSON.parse(call(() => this._n.metrics())) }

  /** The metrics as Prometheus text (GenAI semantic-convention names where they exist). */
  prometheus () { return call(() => this._n.prometheus()) }

  /** Closes a task (the calls that carried `taskId`); false if no call named it. */
  finishTask (taskId, success) { return call(() => this._n.finishTask(taskId, success)) }

  /** Prompt-cache totals per family. */
  cacheTotals () { return JSON.parse(call(() => this._n.cacheTotals())) }
}

module.exports = { Router, Response, toRequest, version: native.version, _armFailpoint: native.armFailpoint, ...errors }
