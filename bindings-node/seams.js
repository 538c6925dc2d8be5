'use strict'
// Laneway under the official clients, unmodified: a WHATWG `fetch` (the `openai` SDK's
// `fetch` option, the Vercel AI SDK's `createOpenAI({ fetch })` and
// `createAmazonBedrock({ fetch })`) and a `requestHandler` for the AWS SDK for JavaScript v3
// (`new BedrockRuntimeClient({ requestHandler })`, which LangChain JS takes as `client`).
// Both hand a request, as the SDK wrote it, to the core's in-process HTTP seam
// (`laneway::surface::http`) and give back the bytes the service would have sent: Converse,
// ConverseStream (event-stream frames), InvokeModel and its stream with Claude's or Nova's body,
// Chat Completions and Responses (whole, or server-sent events), for the models the router's
// configuration routes. Everything above (the SDK's parsing, its error classes, the framework) runs
// unchanged; whatever Laneway does not answer goes where it was going.

const { AsyncLocalStorage } = require('node:async_hooks')
const { Readable } = require('node:stream')

// The core's header on an OpenAI-shaped answer to a call that timed out.
const TIMED_OUT = 'x-laneway-timed-out'

const scoped = new AsyncLocalStorage()

/** Runs `fn` with Laneway's request options (`slo`, `task_id`, `residency`, ...: a request's
 * `laneway` object, snake_case) for every call made inside through a seam, merged over an
 * enclosing scope's. Options a call sets itself (its body's `laneway`) win. Returns what `fn` returns. */
function withOptions (options, fn) {
  const outer = scoped.getStore()
  return scoped.run({ options: { ...(outer ? outer.options : {}), ...options }, decision: null }, fn)
}

// The decision headers of a whole answer (`laneway::surface::http::decision_headers`).
const DECISION = {
  'x-laneway-call-id': ['callId', String],
  'x-laneway-model': ['model', String],
  'x-laneway-target': ['target', String],
  'x-laneway-region': ['region', String],
  'x-laneway-tier': ['tier', String],
  'x-laneway-attempts': ['attemptsSent', Number],
  'x-laneway-cost-usd': ['costUsd', Number]
}

/** Keeps an answer's decision for `lastDecision` in the scope of `withOptions`. */
function remember (headers) {
  const store = scoped.getStore()
  if (!store) return
  const decision = {}
  for (const [name, value] of headers) {
    const key = DECISION[name]
    if (key) decision[key[0]] = key[1](value)
  }
  if (Object.keys(decision).length) store.decision = decision
}

/** What Laneway decided for the last answer a seam gave inside the innermost `withOptions`
 * scope (`callId`, `model`, `target`, `region`, `tier`, `attemptsSent`, `costUsd`), a
 * stream's once read to its end; null outside one. */
function lastDecision () {
  const store = scoped.getStore()
  return store ? store.decision : null
}

function headerPairs (headers) {
  const pairs = []
  for (const [k, v] of Object.entries(headers || {})) {
    if (v !== undefined && v !== null) pairs.push([k.toLowerCase(), String(v)])
  }
  return pairs
}

function withScope (pairs) {
  const store = scoped.getStore()
  if (store && Object.keys(store.options).length) pairs.push(['x-laneway', JSON.stringify(store.options)])
  return pairs
}

function toBuffer (body) {
  if (body == null) return Buffer.alloc(0)
  if (typeof body === 'string') return Buffer.from(body)
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength)
  if (body instanceof ArrayBuffer) return Buffer.from(body)
  return null
}

async function readAll (body) {
  const direct = toBuffer(body)
  if (direct) return direct
  const chunks = []
  for await (const chunk of body) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk))
  return Buffer.concat(chunks)
}

/** Listens for an abort on a signal, or on an older one that has only `onabort`. */
function onAbort (signal, listener) {
  if (!signal) return () => {}
  if (typeof signal.addEventListener === 'function') {
    signal.addEventListener('abort', listener, { once: true })
    return () => signal.removeEventListener('abort', listener)
  }
  const previous = signal.onabort
  signal.onabort = (...args) => { if (previous) previous.apply(signal, args); listener() }
  return () => { signal.onabort = previous }
}

function makeSeams (internals) {
  const { native, convertError, abortError, startHttpSpan, concludeSpan, failSpan } = internals
  // A streamed body dropped unread (its Response or stream collected) is closed: its call is
  // cancelled and what it holds released.
  const dropped = new FinalizationRegistry(({ router, bodyId, span }) => {
    // Its span ends too: with the call's end if it had completed, else as cancelled.
    try { concludeSpan(span, router._n.bodySpanEnd(bodyId)) } catch {}
    router._n.closeBody(bodyId).catch(() => {})
  })

  /** Sends to the core; the answer (`{ status, headers, body | bodyId, span }`), a cancelled
   * call as the standard AbortError. The call is a span of the caller's trace: ended here for
   * a whole answer, by `chunks` for a stream. */
  async function answer (router, method, path, headers, body, signal) {
    if (signal && signal.aborted) throw abortError(signal)
    const n = router._n
    const id = internals.nextCallId()
    const stop = onAbort(signal, () => n.cancel(id))
    const span = startHttpSpan(method, path, headers, body)
    try {
      const a = await n.http(method, path, headers, body, id, span !== null)
      if (a.body) concludeSpan(span, a.spanEnd)
      else a.span = span
      return a
    } catch (e) {
      const err = convertError(e)
      failSpan(span, err)
      if (err.kind === 'aborted') throw abortError(signal)
      throw err
    } finally {
      stop()
    }
  }

  /** A streamed body's chunks; closing or aborting it cancels the call, and ends its span
   * (with the call's end if it had completed: a reader may stop at the protocol's own end). */
  function chunks (router, bodyId, signal, span) {
    const n = router._n
    let closed = false
    let stop = () => {}
    const close = () => {
      if (!closed) {
        closed = true
        stop()
        concludeSpan(span, n.bodySpanEnd(bodyId))
        n.closeBody(bodyId).catch(() => {})
      }
    }
    stop = onAbort(signal, close)
    return {
      close,
      /** The next chunk, or null after the last. */
      async next () {
        if (closed) {
          if (signal && signal.aborted) throw abortError(signal)
          return null
        }
        let chunk
        try {
          chunk = await n.nextChunk(bodyId)
        } catch (e) {
          const err = convertError(e)
          failSpan(span, err)
          throw err
        }
        if (signal && signal.aborted) throw abortError(signal)
        if (chunk === null) {
          remember(n.bodyDecision(bodyId))
          close()
        }
        return chunk
      }
    }
  }

  /** A `fetch` answering what Laneway routes in process and sending the rest to `fallback`
   * (the global `fetch` unless given). */
  function fetchFor (router, options = {}) {
    const fallback = options.fallback || globalThis.fetch
    return async function lanewayFetch (input, init = {}) {
      // The route first, from the input as given: a request sent on untouched.
      const isRequest = typeof Request !== 'undefined' && input instanceof Request
      const url = new URL(isRequest ? input.url : String(input))
      const method = (init.method || (isRequest ? input.method : 'GET')).toUpperCase()
      if (!router._n.httpAnswers(method, url.pathname)) return fallback(input, init)
      const request = new Request(input, init.body instanceof ReadableStream ? { ...init, duplex: 'half' } : init)
      const headers = withScope([...request.headers.entries()])
      const body = Buffer.from(await request.arrayBuffer())
      const signal = init.signal || (isRequest ? input.signal : null)
      const a = await answer(router, method, url.pathname, headers, body, signal)
      remember(a.headers)
      if (a.headers.some(([name]) => name === TIMED_OUT)) {
        // The SDKs raise their timeout error for the transport's, not for a status.
        const text = a.body ? a.body.toString() : 'timed out'
        throw Object.assign(new Error(`request timed out: ${text}`), { name: 'TimeoutError' })
      }
      if (a.body) return new Response(a.body.length ? a.body : null, { status: a.status, headers: a.headers })
      const source = chunks(router, a.bodyId, signal, a.span)
      const stream = new ReadableStream({
        async pull (controller) {
          try {
            const chunk = await source.next()
            if (chunk === null) controller.close()
            else controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength))
          } catch (e) { controller.error(e) }
        },
        cancel () { source.close() }
      })
      dropped.register(stream, { router, bodyId: a.bodyId, span: a.span }, source)
      return new Response(stream, { status: a.status, headers: a.headers })
    }
  }

  /** A request handler for the AWS SDK for JavaScript v3 (`requestHandler`): Converse,
   * ConverseStream, InvokeModel and InvokeModelWithResponseStream answered in process, everything else sent by `fallback` (the SDK's own
   * Node handler unless given). `abortSignal` cancels the call. */
  function requestHandlerFor (router, options = {}) {
    let fallback = options.fallback || null
    return {
      metadata: { handlerProtocol: 'http/1.1' },
      async handle (request, handlerOptions = {}) {
        const path = request.path || '/'
        if (!router._n.httpAnswers(request.method, path)) {
          if (!fallback) {
            const { NodeHttpHandler } = require('@smithy/node-http-handler')
            fallback = new NodeHttpHandler()
          }
          return fallback.handle(request, handlerOptions)
        }
        const signal = handlerOptions.abortSignal || null
        const headers = withScope(headerPairs(request.headers))
        const body = await readAll(request.body)
        const a = await answer(router, request.method, path, headers, body, signal)
        remember(a.headers)
        const responseHeaders = Object.fromEntries(a.headers)
        let responseBody
        if (a.body) {
          responseBody = Readable.from(a.body.length ? [a.body] : [])
        } else {
          const source = chunks(router, a.bodyId, signal, a.span)
          responseBody = new Readable({
            read () {
              source.next().then(chunk => this.push(chunk), e => this.destroy(e))
            },
            // Destroyed (the SDK or the caller let go): the call is cancelled at once, not at
            // the model's next chunk.
            destroy (err, callback) { source.close(); callback(err) }
          })
          dropped.register(responseBody, { router, bodyId: a.bodyId, span: a.span }, source)
        }
        return { response: { statusCode: a.status, reason: undefined, headers: responseHeaders, body: responseBody } }
      },
      updateHttpClientConfig () {},
      httpHandlerConfigs () { return {} },
      destroy () { if (fallback && fallback.destroy) fallback.destroy() }
    }
  }

  return { fetchFor, requestHandlerFor }
}

module.exports = { makeSeams, withOptions, lastDecision }
