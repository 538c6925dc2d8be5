'use strict'
// `require('laneway/openai')`: the `openai` SDK's client shape over a Laneway router.
// `chat.completions.create(body, options)` and `responses.create(body, options)` for every model
// Laneway routes; answers and stream events in the SDK's shapes with Laneway's decision, timings
// and cost under `laneway`. Reading bodies and writing answers is the Rust core's
// (`laneway::surface::openai`); this file only converts.
//
//   // const OpenAI = require('openai')
//   const { OpenAI } = require('laneway/openai')
//   const client = new OpenAI()
//
// `client(router)` gives the app's real `openai` client instead, on `laneway.fetch` (for
// frameworks that check its class).

const laneway = require('./index.js')

const { native, convertError, toJson, streamEvents, abandoned, abortError, STANDS_FOR } = laneway._internals

/** The `openai` package, when the app has it: errors are then its classes too. */
function sdk () {
  if (sdk.loaded === undefined) {
    try { sdk.loaded = require('openai') } catch { sdk.loaded = null }
  }
  return sdk.loaded
}

// The Python SDK's names (the core's table) that the JavaScript SDK spells otherwise.
const JS_NAMES = { APITimeoutError: 'APIConnectionTimeoutError', APIStatusError: 'APIError' }

/** A Laneway error as an instance of the SDK's class for its kind (with `status`, `error`,
 * `code`, `param`, `type`, `requestID`), still `instanceof` Laneway's class, with its details;
 * the Laneway error itself when the app has no `openai` package. */
function sdkError (e) {
  const openai = sdk()
  if (!openai || !(e instanceof laneway.LanewayError)) return e
  const attempts = (e.details && e.details.attempts) || []
  const sdkClass = e.kind === 'aborted'
    ? { class: 'APIUserAbortError', status: null }
    : JSON.parse(native.openaiError(e.kind, attempts.map(a => String(a.kind))))
  const status = sdkClass.status ?? undefined
  const Class = openai[JS_NAMES[sdkClass.class] || sdkClass.class] || openai.APIError
  const body = { message: e.message, type: e.kind, code: e.code, param: e.field ?? null }
  let out
  if (status !== undefined || Class === openai.APIError) {
    out = new Class(status, body, e.message, new Headers(e.requestId ? { 'x-request-id': e.requestId } : {}))
  } else {
    out = new Class({ message: e.message, cause: e })
  }
  out.message = e.message
  for (const [k, v] of Object.entries(e)) if (!(k in out) || ['code', 'type'].includes(k)) out[k] = v
  out.code = e.code
  out.type = e.kind
  out.param = body.param
  out.error = body
  out.cause = e
  out[STANDS_FOR] = e.constructor
  return out
}

/** A streamed answer: `for await (const chunk of stream)`; `stream.controller.abort()` or
 * breaking out of the loop ends it and cancels the request; `toReadableStream()` gives the
 * events as newline-delimited JSON, as the SDK's does. */
class Stream {
  constructor (items, controller) {
    this._items = items
    this.controller = controller
    this._consumed = false
  }

  [Symbol.asyncIterator] () {
    if (this._consumed) throw new Error('laneway: a stream is read once')
    this._consumed = true
    const items = this._items
    const controller = this.controller
    return (async function * () {
      try {
        for await (const item of items) {
          if (controller.signal.aborted) return
          yield item
        }
      } catch (e) {
        // As the SDK's streams: an abort by `controller.abort()` ends the iteration quietly.
        if (controller.signal.aborted) return
        throw sdkError(e)
      }
    })()
  }

  toReadableStream () {
    const iterator = this[Symbol.asyncIterator]()
    const encoder = new TextEncoder()
    return new ReadableStream({
      async pull (ctrl) {
        try {
          const { value, done } = await iterator.next()
          if (done) return ctrl.close()
          ctrl.enqueue(encoder.encode(JSON.stringify(value) + '\n'))
        } catch (e) { ctrl.error(e) }
      },
      async cancel () { await iterator.return() }
    })
  }
}

// The SDK client's options that mean nothing to Laneway: said once, not used.
/** The SDK's options the facade takes and does not use, and the warning for given ones: the
 * core's rules (`laneway::surface::openai::OpenAiSdk`). */
const openaiOptions = given => JSON.parse(native.openaiOptions(given))
const { client: CLIENT_OPTIONS, request: UNUSED_REQUEST_OPTIONS } = openaiOptions([])

/** The options of a router: Laneway's own, or an existing `router`. */
const ROUTER_OPTIONS = ['config', 'configPath', 'endpointUrl', 'accessKeyId', 'secretAccessKey', 'bedrockApiKey']

class OpenAI {
  /**
   * @param {object} [options] `router` (a `laneway.Router`), or the options to build one
   *   (`config`, `configPath`, `endpointUrl`, `accessKeyId`, `secretAccessKey`); `apiKey` may be
   *   a Bedrock API key (sent as the bearer token to Bedrock's OpenAI-compatible endpoints);
   *   `timeout` (ms) is each call's deadline. The SDK's other client options are warned of.
   */
  constructor (options = {}) {
    const { router, apiKey, timeout, ...rest } = options
    const ignored = []
    const own = {}
    for (const [k, v] of Object.entries(rest)) {
      if (v === undefined) continue
      if (ROUTER_OPTIONS.includes(k)) own[k] = v
      else if (CLIENT_OPTIONS.includes(k)) ignored.push(k)
      else throw new TypeError(`laneway/openai: unknown option ${k}`)
    }
    if (ignored.length) process.emitWarning(`laneway/openai: ${openaiOptions(ignored).warning}`)
    if (apiKey) {
      if (native.isBedrockApiKey(apiKey)) own.bedrockApiKey = apiKey
      else process.emitWarning('laneway/openai: apiKey is not a Bedrock API key and is not sent (AWS credentials sign the calls)')
    }
    if (router) {
      if (Object.keys(own).length) throw new TypeError('laneway/openai: give a router, or the options to build one, not both')
      this.router = router
    } else {
      this.router = new laneway.Router(own)
    }
    this.timeout = timeout
    this.chat = { completions: { create: (body, opts) => this._call('chat', body, opts) } }
    this.responses = { create: (body, opts) => this._call('responses', body, opts) }
  }

  /** The body the core reads: `timeout` as the deadline, headers and query said as not sent;
   * the SDK's per-request retry options, which Laneway does not use, warned of. */
  _body (body, opts) {
    const out = { ...body }
    const timeout = opts.timeout ?? this.timeout
    // The core makes it the call's deadline, unless `laneway.deadline_ms` sets one.
    if (timeout !== undefined) out.timeout_ms = timeout
    const headers = plainObject(opts.headers)
    if (Object.keys(headers).length) out.extra_headers = headers
    const query = plainObject(opts.query)
    if (Object.keys(query).length) out.extra_query = query
    const unused = UNUSED_REQUEST_OPTIONS.filter(k => opts[k] !== undefined)
    if (unused.length) process.emitWarning(`laneway/openai: ${openaiOptions(unused).warning}`)
    return toJson(out)
  }

  async _call (api, body, opts = {}) {
    if (body === null || typeof body !== 'object') throw sdkError(convertError(new Error(JSON.stringify({ kind: 'invalid_request', field: 'body', message: 'body: an object of the API\'s fields' }))))
    const json = this._body(body, opts)
    const router = this.router
    if (body.stream) {
      if (opts.signal && opts.signal.aborted) throw sdkError(abortError(opts.signal))
      let id
      try {
        id = router._n.openOpenaiStream(api, json)
      } catch (e) { throw sdkError(convertError(e)) }
      const controller = new AbortController()
      const signal = opts.signal
      const forward = () => controller.abort(signal.reason)
      if (signal) signal.addEventListener('abort', forward, { once: true })
      const events = streamEvents(router._n, id, controller.signal, ev => ev)
      abandoned.register(events, { native: router._n, id }, events)
      // As the SDK's: the stream is returned once the answer has begun, so that a call that
      // fails before its first event (throttled everywhere, refused) rejects here.
      let first
      try {
        first = await events.next()
      } catch (e) {
        if (signal) signal.removeEventListener('abort', forward)
        throw sdkError(e)
      }
      const items = (async function * () {
        try {
          if (!first.done) yield first.value
          yield * events
        } finally {
          if (signal) signal.removeEventListener('abort', forward)
          await events.return()
        }
      })()
      return new Stream(items, controller)
    }
    try {
      return JSON.parse(await router._abortable(id => router._n.openai(api, json, id), opts.signal))
    } catch (e) {
      if (e && e.kind === 'aborted' && opts.signal) throw sdkError(abortError(opts.signal))
      throw sdkError(e)
    }
  }
}

/** Headers or query parameters (an object, a `Headers`, entries) as a plain object. */
function plainObject (value) {
  if (!value) return {}
  if (typeof value.entries === 'function' && !Array.isArray(value)) return Object.fromEntries(value.entries())
  if (Array.isArray(value)) return Object.fromEntries(value)
  return { ...value }
}

/** A real `openai` client (the app's own `openai` package) whose requests `router` answers in
 * process through `laneway.fetch`: for frameworks that check they were given the SDK's own
 * class. The SDK's retries are off (Laneway retried already); `options` are the SDK's. */
function client (router, options = {}) {
  const openai = sdk()
  if (!openai) throw new Error("laneway/openai client(): install the 'openai' package (npm install openai)")
  const SDK = openai.OpenAI || openai.default || openai
  return new SDK({
    apiKey: 'laneway-in-process',
    baseURL: 'http://laneway.invalid/v1',
    maxRetries: 0,
    ...options,
    fetch: laneway.fetch(router, options.fallback ? { fallback: options.fallback } : {})
  })
}

module.exports = { OpenAI, Stream, client, default: OpenAI }
