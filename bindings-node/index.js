'use strict'
// The `laneway` package: converts JavaScript values to the Rust core's JSON shapes and back.
// Every routing decision is made by the core (the native addon).

const native = loadNative()

/** The native addon: the prebuilt platform package (napi-rs layout, installed as an optional
 * dependency), else a build from the checkout (`npm run build`) next to this file. */
function loadNative () {
  const libc = process.platform === 'linux' && process.report && process.report.getReport().header.glibcVersionRuntime ? 'gnu' : 'musl'
  const platform = process.platform === 'linux' ? `linux-${process.arch}-${libc}` : `${process.platform}-${process.arch}`
  const tried = []
  for (const candidate of [`laneway-${platform}`, './laneway.node']) {
    try {
      return require(candidate)
    } catch (e) {
      if (e.code !== 'MODULE_NOT_FOUND') throw e
      tried.push(candidate)
    }
  }
  throw new Error(`laneway: no native addon for ${platform} (tried ${tried.join(', ')}): install the prebuilt package, or build from source with \`npm run build\` in bindings-node (needs Rust)`)
}

/** The Laneway class an error of another class hierarchy stands for. */
const STANDS_FOR = Symbol('laneway.standsFor')

const camel = key => key.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase())

/** Every error Laneway throws. `kind` is the stable error kind (e.g. 'throttled', the core's
 * `ErrorDetails`), `code` the service's own error code where one came (e.g.
 * 'ThrottlingException'), else null; the other details (`field`, `target`, `region`,
 * `httpStatus`, `requestId`, `retryAfterMs`, `attempts`, `budgetExhausted`, `delivered`) are
 * properties, and all of them, as the core gives them, are `details`. */
class LanewayError extends Error {
  /** An error of the `openai`-shaped client (`laneway/openai`) is an instance of the `openai`
   * SDK's class for its kind, and of Laneway's class too. */
  static [Symbol.hasInstance] (value) {
    if (Function.prototype[Symbol.hasInstance].call(this, value)) return true
    const stands = value != null && value[STANDS_FOR]
    return typeof stands === 'function' && (stands === this || stands.prototype instanceof this)
  }

  constructor (details, options) {
    super(details.message, options)
    this.name = this.constructor.name
    this.kind = details.kind
    this.code = details.code ?? null
    this.details = details
    for (const [k, v] of Object.entries(details)) {
      // `cause` is the standard property `options.cause` sets: the details of the error that
      // ended a stream are `causeDetails`.
      if (k === 'cause') this.causeDetails = v
      else if (!['message', 'kind', 'code'].includes(k)) this[camel(k)] = v
    }
  }
}

const views = require('./views')
// The core's kinds (generated from its schema), and Node's own: a call cancelled through its
// `AbortSignal`.
const KINDS = { ...views.KINDS, aborted: 'AbortError' }
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

/** JSON of a value whose binary parts (`Uint8Array`, `Buffer`) go as base64 text, the
 * schema's form for bytes. */
function toJson (value) {
  return JSON.stringify(value, function (key, v) {
    const original = this[key]
    return original instanceof Uint8Array ? Buffer.from(original.buffer, original.byteOffset, original.byteLength).toString('base64') : v
  })
}

/** The caller's request as the core reads it (`laneway::surface::flat`, which decides every
 * key): a prompt string with options, an options object, or an object in the core's shape. */
function toRequest (request, options = {}) {
  return typeof request === 'string' ? { ...options, prompt: request } : request
}

/** The answer to a call. */
class Response {
  constructor (d) { this._d = d }
  /** All text blocks, concatenated. */
  get text () { return this._d.content.filter(b => 'text' in b).map(b => b.text).join('') }
  get toolUses () { return this._d.content.filter(b => 'tool_use' in b).map(b => b.tool_use) }
  /** The model's readable reasoning, concatenated ('' without it, or when redacted). */
  get reasoningText () { return this._d.content.filter(b => b.reasoning && b.reasoning.text).map(b => b.reasoning.text.text).join('') }
  get stopReason () { return this._d.stop_reason }
  get usage () { return views.usage(this._d.usage) }
  get timings () { return views.timings(this._d.timings) }
  get decision () { return views.decision(this._d.decision) }
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

// Each call as a span in the app's OpenTelemetry trace, when the app has registered an
// OpenTelemetry SDK (`@opentelemetry/api` resolvable and a tracer provider set): the core maps
// requests, responses and errors to the span's name, attributes and events
// (`laneway::surface::otel`); the span is the app's provider's. Inside a GenAI span the app's
// own instrumentation opened around the call, Laneway adds to it instead of writing a second.
let otelApi
function otel () {
  if (otelApi === undefined) {
    try { otelApi = require('@opentelemetry/api') } catch { otelApi = null }
  }
  return otelApi
}

/** The call's span: the GenAI span the app's instrumentation opened around it, else a new
 * CLIENT span from `start()` (JSON `{name, attributes}`, or null for no call). */
function openSpan (start) {
  const api = otel()
  if (!api) return null
  const provider = api.trace.getTracerProvider()
  // The global provider is a proxy with no delegate until an SDK registers: nothing to do.
  if (typeof provider.getDelegateTracer === 'function' && !provider.getDelegateTracer('laneway')) return null
  const parent = api.context.active()
  const current = api.trace.getSpan(parent)
  if (current && current.isRecording() && current.attributes && current.attributes['gen_ai.operation.name']) {
    return { api, span: current, own: false, done: false }
  }
  let opened
  try { opened = start() } catch { return null }
  if (!opened) return null
  opened = JSON.parse(opened)
  const tracer = provider.getTracer('laneway', native.version(), { schemaUrl: native.otelSchemaUrl() })
  const span = tracer.startSpan(opened.name, { kind: api.SpanKind.CLIENT, attributes: opened.attributes }, parent)
  if (!span.isRecording()) { span.end(); return null }
  return { api, span, own: true, done: false }
}

function startSpan (requestJson, stream) {
  return openSpan(() => native.otelStart(requestJson, stream))
}

/** The span of a call a seam answers (`fetch`, the AWS SDK's request handler), from its HTTP
 * request. */
function startHttpSpan (method, path, headers, body) {
  return openSpan(() => native.otelStartHttp(method, path, headers, body))
}

/** Ends a seam call's span with what the core made of its end (JSON, or null when it never
 * completed: cancelled); an `error.type` among its attributes is a failure. */
function concludeSpan (s, endJson) {
  if (!s || s.done) return
  if (!endJson) { cancelSpan(s); return }
  s.done = true
  try {
    const end = JSON.parse(endJson)
    endSpan(s, end)
    const kind = end.attributes['error.type']
    if (kind != null && s.own) s.span.setStatus({ code: s.api.SpanStatusCode.ERROR, message: String(kind) })
  } finally { if (s.own) s.span.end() }
}

const present = attributes => Object.fromEntries(Object.entries(attributes).filter(([, v]) => v !== null && v !== undefined))

function endSpan (s, end) {
  let attributes = present(end.attributes)
  // The instrumentation's own span already says provider, model and usage its way.
  if (!s.own) attributes = Object.fromEntries(Object.entries(attributes).filter(([k]) => k.startsWith('laneway.')))
  s.span.setAttributes(attributes)
  for (const e of end.events) s.span.addEvent(e.name, present(e.attributes))
}

function finishSpan (s, responseJson) {
  if (!s || s.done) return
  s.done = true
  try { endSpan(s, JSON.parse(native.otelFinish(responseJson))) } finally { if (s.own) s.span.end() }
}

function failSpan (s, error) {
  if (!s || s.done) return
  s.done = true
  try {
    if (error && error.details) endSpan(s, JSON.parse(native.otelFailed(JSON.stringify(error.details))))
    else s.span.setAttribute('error.type', (error && error.name) || 'Error')
    if (s.own) {
      s.span.recordException(error)
      s.span.setStatus({ code: s.api.SpanStatusCode.ERROR, message: String((error && error.kind) || (error && error.name) || 'error') })
    }
  } finally { if (s.own) s.span.end() }
}

function cancelSpan (s) {
  if (!s || s.done) return
  s.done = true
  s.span.setAttribute('laneway.cancelled', true)
  if (s.own) s.span.end()
}

/** A stream's events with its span: ended at the completed event, on an error, or as cancelled
 * when its caller stops reading. */
async function * spanned (events, span) {
  try {
    for await (const ev of events) {
      if (ev.type === 'completed') finishSpan(span, JSON.stringify(ev.data))
      yield ev
    }
  } catch (e) {
    failSpan(span, e)
    throw e
  } finally {
    cancelSpan(span)
  }
}

// Laneway's metrics on the app's OpenTelemetry meter: one instrument per metric of the core's
// catalog (the names, units, buckets and attributes of the Prometheus text and of a Rust app's
// meter) on the meter `laneway`. The core queues each call's measurements; an unreferenced timer
// drains them into the histograms and counters twice a second, and each collection drains them
// first, then observes the gauges (calls in flight, queue depth, breakers, ejected regions,
// shared state) from the router.
const METER_DRAIN_MS = 500
const METER_BATCH = 512
const OBSERVABLE = { observable_counter: 'createObservableCounter', observable_up_down_counter: 'createObservableUpDownCounter', observable_gauge: 'createObservableGauge' }

/** Whether the app has registered a global meter provider (the API's no-op meter otherwise). */
function meterProviderSet (api) {
  return typeof api.createNoopMeter === 'function' && api.metrics.getMeter('laneway') !== api.createNoopMeter()
}

// Each meter's observable instruments, made once: every collection observes each router
// instrumented on the meter (a meter keeps the instrument it has, so a second router's own would
// never be read). A state (a breaker, an ejection) is the highest any router sees; counts add up.
const observersByMeter = new WeakMap()

function observersOf (meter, specs) {
  let found = observersByMeter.get(meter)
  if (found) return found
  const members = new Set()
  const observables = new Map()
  const gauges = new Set()
  for (const spec of specs) {
    if (!OBSERVABLE[spec.kind]) continue
    observables.set(spec.name, meter[OBSERVABLE[spec.kind]](spec.name, { unit: spec.unit, description: spec.description }))
    if (spec.kind === 'observable_gauge') gauges.add(spec.name)
  }
  meter.addBatchObservableCallback(result => {
    const totals = new Map()
    for (const member of members) {
      for (const [name, value, attributes] of member.observations()) {
        if (!observables.has(name)) continue
        const key = name + '|' + JSON.stringify(Object.entries(attributes).sort())
        const seen = totals.get(key)
        const combined = seen === undefined ? value : gauges.has(name) ? Math.max(seen.value, value) : seen.value + value
        totals.set(key, { name, value: combined, attributes })
      }
    }
    for (const { name, value, attributes } of totals.values()) result.observe(observables.get(name), value, attributes)
  }, [...observables.values()])
  found = { members }
  observersByMeter.set(meter, found)
  return found
}

class Instruments {
  constructor (router, api, provider) {
    const meter = (provider || api.metrics.getMeterProvider()).getMeter('laneway', native.version(), { schemaUrl: native.otelSchemaUrl() })
    this._router = new WeakRef(router)
    this._closed = false
    this._recorders = new Map()
    const specs = JSON.parse(native.metricInstruments())
    for (const spec of specs) {
      const options = { unit: spec.unit, description: spec.description }
      if (spec.kind === 'histogram') {
        const h = meter.createHistogram(spec.name, { ...options, advice: { explicitBucketBoundaries: spec.buckets } })
        this._recorders.set(spec.name, (v, a) => h.record(v, a))
      } else if (spec.kind === 'counter') {
        const c = meter.createCounter(spec.name, options)
        this._recorders.set(spec.name, (v, a) => c.add(v, a))
      }
    }
    // The core keeps measurements from the first drain on: from now; and a target already
    // attempted starts its attempts from zero here.
    this.drain()
    router._n.restartHostSeries()
    this._observers = observersOf(meter, specs)
    this._observers.members.add(this)
    this._timer = setInterval(() => this.drain(), METER_DRAIN_MS)
    this._timer.unref()
  }

  _native () {
    const router = this._closed ? undefined : this._router.deref()
    return router && router._n
  }

  /** Records every measurement the core has queued. */
  drain () {
    const n = this._native()
    if (!n) { this._stop(); return }
    for (;;) {
      const batch = JSON.parse(n.drainMeasurements(METER_BATCH))
      for (const [name, value, attributes] of batch) {
        const record = this._recorders.get(name)
        if (record) record(value, attributes)
      }
      if (batch.length < METER_BATCH) return
    }
  }

  /** The router's gauges now, after taking in what its queue holds (collection time: the
   * histograms and counters get what finished calls left first). */
  observations () {
    const n = this._native()
    if (!n) { this._stop(); return [] }
    this.drain()
    return JSON.parse(n.observe())
  }

  _stop () {
    if (this._closed) return
    this._closed = true
    clearInterval(this._timer)
    this._observers.members.delete(this)
  }

  /** Stops feeding these instruments, after handing them what the core has queued. */
  close () {
    if (!this._closed) this.drain()
    this._stop()
  }

  dropped () {
    const n = this._native()
    return n ? n.measurementsDropped() : 0
  }
}

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

async function * streamEvents (native, id, signal, wrap = event) {
  const onAbort = () => call(() => native.closeStream(id))
  if (signal) signal.addEventListener('abort', onAbort, { once: true })
  try {
    while (true) {
      if (signal && signal.aborted) throw abortError(signal)
      let batch
      try {
        // Every event already available comes in one batch: one parse, and no asynchronous
        // hand-over at all when the stream has read ahead of us.
        const ready = native.readyEvents(id)
        batch = JSON.parse(ready === null ? await native.nextEvents(id) : ready)
      } catch (e) { throw convertError(e) }
      if (batch.length === 0) {
        if (signal && signal.aborted) throw abortError(signal)
        return
      }
      for (const ev of batch) yield wrap(ev)
    }
  } finally {
    if (signal) signal.removeEventListener('abort', onAbort)
    call(() => native.closeStream(id))
  }
}

// Laneway's logs: the core's records (process-wide) go to the logger of every live router, each
// at its own level; the core keeps only what the most verbose of them wants. A router without a
// `logger` option logs warnings and errors to the console; `logger: null` logs nothing.
const LOG_LEVELS = ['error', 'warn', 'info', 'debug', 'trace']
const LOG_METHODS = { error: 'error', warn: 'warn', info: 'info', debug: 'debug', trace: 'debug' }
const logSinks = new Map() // token -> { logger, level }
const consoleLogger = { error: (...a) => console.error(...a), warn: (...a) => console.warn(...a), info: (...a) => console.info(...a), debug: (...a) => console.debug(...a) }
const forgetSink = new FinalizationRegistry(token => { logSinks.delete(token); applyLogLevel() })
let logsStarted = false

function applyLogLevel () {
  let most = -1
  for (const { level } of logSinks.values()) most = Math.max(most, LOG_LEVELS.indexOf(level))
  native.setLogLevel(most < 0 ? 'off' : LOG_LEVELS[most])
}

function dispatchLogs (json) {
  if (typeof json !== 'string') return
  let records
  try { records = JSON.parse(json) } catch { return }
  const seen = new Set()
  for (const { logger, level } of logSinks.values()) {
    if (seen.has(logger)) continue
    seen.add(logger)
    const most = LOG_LEVELS.indexOf(level)
    for (const r of records) {
      if (LOG_LEVELS.indexOf(r.level) > most) continue
      const method = logger[LOG_METHODS[r.level]]
      if (typeof method !== 'function') continue
      const fields = Object.fromEntries(r.fields)
      const message = r.repeated ? `${r.message} (and ${r.repeated} times more in the last minute)` : r.message
      try {
        method.call(logger, `[${r.logger}] ${message}`, { logger: r.logger, fields, repeated: r.repeated })
      } catch { /* a logger that throws loses its record, as a failing log handler does */ }
    }
  }
}

/** Registers `owner`'s logger (`undefined`: the console at `warn`; `null`: none). */
function registerLogger (owner, logger, level) {
  if (logger === null) return
  const sink = { logger: logger === undefined ? consoleLogger : logger, level: level || 'warn' }
  if (!LOG_LEVELS.includes(sink.level)) {
    throw new errors.InvalidRequestError({ kind: 'invalid_request', field: 'logLevel', message: `logLevel: ${JSON.stringify(sink.level)} is not one of ${LOG_LEVELS.join(', ')}` })
  }
  if (typeof sink.logger !== 'object' || LOG_LEVELS.every(l => typeof sink.logger[LOG_METHODS[l]] !== 'function')) {
    throw new errors.InvalidRequestError({ kind: 'invalid_request', field: 'logger', message: 'logger: an object with error, warn, info and debug functions, or null' })
  }
  const token = {}
  logSinks.set(token, sink)
  forgetSink.register(owner, token)
  if (!logsStarted) {
    native.startLogs(dispatchLogs)
    logsStarted = true
  }
  applyLogLevel()
}

/** The router options' names in the core's schema. */
const OPTION_KEYS = { config: 'config', configPath: 'config_path', endpointUrl: 'endpoint_url', accessKeyId: 'access_key_id', secretAccessKey: 'secret_access_key', bedrockApiKey: 'bedrock_api_key' }

/** Routes calls per their SLO. */
// `[record]`'s lines as the app's OpenTelemetry log records (`router.recordLogs()`).
const RECORD_BATCH = 512
const RECORD_DRAIN_MS = 250

let logsApi
function otelLogs () {
  if (logsApi === undefined) {
    try { logsApi = require('@opentelemetry/api-logs') } catch { logsApi = null }
  }
  return logsApi
}

/** One router's trace lines going to one logger provider: each line a log record on the
 * logger `laneway`, event name `laneway.record.<kind>`, body the line's JSON. */
class RecordLogs {
  constructor (router, api, provider) {
    this._logger = (provider || api.logs.getLoggerProvider()).getLogger('laneway', native.version())
    this._severity = api.SeverityNumber.INFO
    this._router = new WeakRef(router)
    this._closed = false
    // The queue starts with this router's header: the first record, before any call's.
    this.drain()
    this._timer = setInterval(() => this.drain(), RECORD_DRAIN_MS)
    this._timer.unref()
  }

  /** Emits every line the core has queued. */
  drain () {
    const router = this._closed ? undefined : this._router.deref()
    if (!router) { this.close(); return }
    for (;;) {
      const lines = JSON.parse(router._n.drainRecordLines(RECORD_BATCH))
      for (const [kind, body] of lines) {
        this._logger.emit({
          eventName: `laneway.record.${kind}`,
          severityNumber: this._severity,
          severityText: 'INFO',
          body,
          attributes: { 'laneway.record.line': kind }
        })
      }
      if (lines.length < RECORD_BATCH) return
    }
  }

  close () {
    this._closed = true
    clearInterval(this._timer)
  }
}

class Router {
  /**
   * @param {object} [options] `config` (an object in the TOML layout, TOML text, or a path to a
   *   TOML file), or `configPath`; `endpointUrl` (the emulator), `accessKeyId` /
   *   `secretAccessKey`; `bedrockApiKey` (a Bedrock API key for the OpenAI-compatible endpoints). A path that does not exist is a `ConfigError`.
   */
  constructor (options = {}) {
    const { logger, logLevel, ...rest } = options
    registerLogger(this, logger, logLevel)
    const o = {}
    // An unknown key goes as it is, so that the core's error names it.
    for (const [key, value] of Object.entries(rest)) if (value !== undefined) o[OPTION_KEYS[key] || key] = value
    try {
      this._n = new native.NativeRouter(JSON.stringify(o))
    } catch (e) { throw convertError(e) }
    this._instruments = null
    this._recordLogs = null
    const api = otel()
    if (api && meterProviderSet(api)) {
      try {
        this.instrument()
      } catch (e) {
        // The app's metrics must not stop its router.
        process.emitWarning(`laneway: metrics not recorded on the global meter provider: ${e && e.message}`)
      }
    }
  }

  /**
   * Records Laneway's metrics on `meterProvider`'s meter `laneway` (the global meter provider
   * when omitted): the instruments of a Rust app's meter and the names of `prometheus()`. A
   * router made after the app registered its meter provider is instrumented already; calling
   * this again moves the metrics to the new provider. Needs `@opentelemetry/api`.
   */
  instrument (meterProvider) {
    const api = otel()
    if (!api) throw new errors.InvalidRequestError({ kind: 'invalid_request', field: 'meterProvider', message: 'instrument needs @opentelemetry/api (npm install @opentelemetry/api, and an SDK for an exporter)' })
    // The old instruments get what was measured before this call, the new ones what follows.
    if (this._instruments) this._instruments.close()
    this._instruments = null
    this._instruments = new Instruments(this, api, meterProvider)
  }

  /** Sends a request; `{ signal }` cancels it. Resolves to a `Response`. */
  async generate (request, options = {}) {
    const { signal, ...rest } = options
    const json = toJson(toRequest(request, rest))
    const span = startSpan(json, false)
    let answer
    try {
      answer = await this._abortable(id => this._n.generate(json, id), signal)
    } catch (e) {
      failSpan(span, e)
      throw e
    }
    finishSpan(span, answer)
    return new Response(JSON.parse(answer))
  }

  /**
   * The JavaScript SDK's `ConverseCommand`, routed: its input as it is (`modelId`, `messages`,
   * `system`, `inferenceConfig`, `toolConfig`, `serviceTier`, `outputConfig`,
   * `additionalModelRequestFields` with Claude's `thinking` or Nova 2's `reasoningConfig`,
   * `requestMetadata`; bytes as `Uint8Array`), plus `laneway` for Laneway's own options (`slo`,
   * `task_id`, `residency`, `reasoning`, `model: { family }`). Resolves to the SDK's output
   * shape (reasoning blocks included) with Laneway's decision, timings and cost under
   * `laneway`. `guardrailConfig` and `guardContent` go as they are; `promptVariables`
   * (prompt-management prompts, not routed by Laneway) is refused by name.
   */
  async converse (input, options = {}) {
    const json = toJson(input)
    return JSON.parse(await this._abortable(id => this._n.converse(json, id), options.signal))
  }

  async _abortable (start, signal) {
    if (signal && signal.aborted) throw abortError(signal)
    const id = nextCallId++
    const onAbort = () => this._n.cancel(id)
    if (signal) signal.addEventListener('abort', onAbort, { once: true })
    try {
      return await start(id)
    } catch (e) {
      const err = convertError(e)
      if (err.kind === 'aborted') throw abortError(signal)
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
    const json = JSON.stringify(toRequest(request, rest))
    const span = startSpan(json, true)
    try {
      id = this._n.openStream(json)
    } catch (e) {
      const error = convertError(e)
      failSpan(span, error)
      return (async function * () { throw error })()
    }
    const events = streamEvents(this._n, id, signal)
    abandoned.register(events, { native: this._n, id }, events)
    return span ? spanned(events, span) : events
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

  /** Closes a task (the calls that carried `taskId`); false if no call named it. Its outcome is
   * feedback on each of its calls that a family's router chose. */
  finishTask (taskId, success) { return call(() => this._n.finishTask(taskId, success)) }

  /** Says whether a call's answer was good (`callId` is `response.decision.callId`): its
   * family's router updates the served variant's success estimate for the prompt's kind and
   * difficulty, and moves later such prompts within the family's `quality_loss_budget`.
   * Throws `InvalidRequestError` for a malformed id or a call no family router chose. */
  feedback (callId, good) { call(() => this._n.feedback(callId, good)) }

  /** What the family routers have learned from feedback: per family, each cell (task kind and
   * difficulty band) with outcomes. */
  feedbackReport () { return JSON.parse(call(() => this._n.feedbackReport())) }

  /** The changes the calls `[record]` sampled since the router started support, ranked by
   * projected monthly saving: each with its `action` (in configuration terms), `patch` (the
   * change as a configuration table), `monthly_saving_usd`, `risk` and `evidence`; per class
   * its calls, attainment and cost; and what was `not_assessed` (keys as the schema spells
   * them, like `metrics()`). Throws `ConfigError` without a `[record]` table (its `path` is
   * optional). */
  advice () { return JSON.parse(call(() => this._n.advice())) }

  /** Resolves, within `timeoutMs`, once `[record]`'s lines of the calls finished so far are
   * written (to its file, to what `advice()` reads, and to the app's logs after
   * `recordLogs`): whether they all were. For a process about to exit. */
  async flushRecord (timeoutMs = 5000) {
    const done = await settle(() => this._n.flushRecord(timeoutMs))
    if (this._recordLogs) this._recordLogs.drain()
    return done
  }

  /** Sends `[record]`'s lines to `loggerProvider` (the global logger provider when omitted)
   * as OpenTelemetry log records: one per line, event name `laneway.record.call` (and
   * `.outcome`, `.load`, `.header`), body the line's JSON. Calling it again moves them to the
   * new provider. Throws `ConfigError` without a `[record]` table. Needs
   * `@opentelemetry/api-logs`. */
  recordLogs (loggerProvider) {
    const api = otelLogs()
    if (!api) throw new errors.InvalidRequestError({ kind: 'invalid_request', field: 'loggerProvider', message: 'recordLogs needs @opentelemetry/api-logs (npm install @opentelemetry/api-logs, and an SDK for an exporter)' })
    call(() => this._n.drainRecordLines(0))
    if (this._recordLogs) this._recordLogs.close()
    this._recordLogs = null
    this._recordLogs = new RecordLogs(this, api, loggerProvider)
  }

  /** Prompt-cache totals per family. */
  cacheTotals () { return JSON.parse(call(() => this._n.cacheTotals())) }

  // The batch lane. A request here needs `slo: 'batch'`; the configuration a `[batch]` section
  // (`bucket`, `role_arn`).

  /** Collects batch requests for one submission: `session.push(request)`, then
   * `await session.submit()`. */
  batchSession () { return new BatchSession(call(() => this._n.batchSession())) }

  /** Submits requests to the batch lane (Bedrock batch jobs at the batch price; requests that
   * cannot wait, or too few for a job, go to flex now). Resolves to a `BatchHandle`. */
  async submitBatch (requests) {
    const json = toJson(Array.from(requests, r => toRequest(r)))
    return new BatchHandle(await settle(() => this._n.submitBatch(json)))
  }

  /** Every job's state: `{ jobs, done, total, finished }`. */
  async batchStatus (handle) {
    return JSON.parse(await settle(() => this._n.batchStatus(nativeHandle(handle))))
  }

  /** Polls until every job has ended (every `[batch] poll_interval`), calling
   * `progress(status)` after each poll; resolves to the last status. `{ signal }` cancels the
   * wait (not the jobs); an exception thrown by `progress` ends the wait and rejects with it. */
  async waitBatch (handle, progress, options = {}) {
    let thrown
    const report = progress && (json => {
      if (thrown !== undefined) return
      try { progress(JSON.parse(json)) } catch (e) {
        thrown = { error: e }
        this._n.cancel(id)
      }
    })
    const signal = options.signal
    if (signal && signal.aborted) throw abortError(signal)
    const id = nextCallId++
    const onAbort = () => this._n.cancel(id)
    if (signal) signal.addEventListener('abort', onAbort, { once: true })
    try {
      return JSON.parse(await this._n.waitBatch(nativeHandle(handle), report, id))
    } catch (e) {
      if (thrown) throw thrown.error
      const err = convertError(e)
      if (err.kind === 'aborted') throw abortError(signal)
      throw err
    } finally {
      if (signal) signal.removeEventListener('abort', onAbort)
    }
  }

  /** One item per request, in submission order: `{ output: { text, usage, costUsd, model,
   * lane, diverted } }` or `{ error: { kind, errorKind, code, message } }`. Rejects if a job
   * has not ended. */
  async batchResults (handle) {
    return camelKeys(JSON.parse(await settle(() => this._n.batchResults(nativeHandle(handle)))))
  }

  /** Stops the jobs that have not ended; resolves to how many were stopped. */
  async cancelBatch (handle) {
    return settle(() => this._n.cancelBatch(nativeHandle(handle)))
  }
}

/** A submitted batch: `toJSON()` (also what `JSON.stringify` writes) keeps it;
 * `BatchHandle.fromJSON(text)` resumes it, in this process or another. */
class BatchHandle {
  constructor (native) { this._n = native }
  /** The ARNs of the batch's jobs. */
  get jobArns () { return this._n.jobArns }
  toJSON () { return JSON.parse(this._n.toJson()) }
  static fromJSON (text) {
    return new BatchHandle(call(() => native.NativeBatchHandle.fromJson(typeof text === 'string' ? text : JSON.stringify(text))))
  }
}

function nativeHandle (handle) {
  if (!(handle instanceof BatchHandle)) throw new TypeError('a BatchHandle (from submitBatch, a session, or BatchHandle.fromJSON) is needed')
  return handle._n
}

/** Requests of SLO class batch collected for one submission (`router.batchSession()`). */
class BatchSession {
  constructor (native) { this._n = native }
  /** Adds a request (as `generate` takes one); returns its index in the results. */
  push (request, options = {}) { return call(() => this._n.push(toJson(toRequest(request, options)))) }
  get length () { return this._n.length }
  /** Submits everything collected; resolves to a `BatchHandle`. */
  async submit () { return new BatchHandle(await settle(() => this._n.submit())) }
}

/** Awaits a native promise, its rejection as a Laneway error. */
async function settle (start) {
  try {
    return await start()
  } catch (e) { throw convertError(e) }
}

/** The schema's snake_case keys as camelCase, deeply. */
function camelKeys (value) {
  if (Array.isArray(value)) return value.map(camelKeys)
  if (value === null || typeof value !== 'object') return value
  const out = {}
  for (const [k, v] of Object.entries(value)) out[camel(k)] = camelKeys(v)
  return out
}

/** For `laneway/openai` and the seams: the pieces they convert with. */
const internals = { native, convertError, toJson, streamEvents, abandoned, abortError, STANDS_FOR, KINDS, nextCallId: () => nextCallId++, startHttpSpan, concludeSpan, failSpan }

const { makeSeams, withOptions, lastDecision } = require('./seams')
const seams = makeSeams(internals)

/** A WHATWG `fetch` that `router` answers Converse, ConverseStream, Chat Completions and
 * Responses requests on, in process (for the `openai` SDK's `fetch` option, the Vercel AI
 * SDK's providers); every other request goes to `options.fallback` (the global `fetch`). */
function fetch (router, options) { return seams.fetchFor(router, options) }

/** A request handler for the AWS SDK for JavaScript v3 (`new BedrockRuntimeClient({
 * requestHandler })`): Converse and ConverseStream answered by `router` in process, the rest
 * sent by `options.fallback` (the SDK's own Node handler). */
function requestHandler (router, options) { return seams.requestHandlerFor(router, options) }

module.exports = { Router, Response, logDropped: () => Number(native.logDropped()), BatchHandle, BatchSession, toRequest, fetch, requestHandler, withOptions, lastDecision, version: native.version, _armFailpoint: native.armFailpoint, _schema: () => JSON.parse(native.schema()), _metricInstruments: () => JSON.parse(native.metricInstruments()), _KINDS: KINDS, ...errors }
Object.defineProperty(module.exports, '_internals', { value: internals })
