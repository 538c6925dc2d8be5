// `require('laneway/openai')`: the `openai` SDK's client shape over a Laneway router, typed with
// the SDK's own request and answer types (an app moving from `openai` has the package).
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionCreateParamsStreaming,
} from 'openai/resources/chat/completions'
import type {
  Response as OpenAIResponse,
  ResponseCreateParamsNonStreaming,
  ResponseCreateParamsStreaming,
  ResponseStreamEvent,
} from 'openai/resources/responses/responses'
import type { Router, RouterOptions } from './index'
import type OpenAISDK from 'openai'

/** What Laneway adds beside the SDK's shape (under `laneway`): the decision (the core's
 * snake_case keys), timings and cost. */
export interface LanewayExtras {
  decision: { call_id: string; provider: string; model: string; family?: string | null; target: string; region: string; tier?: string | null; served_tier?: string | null; reasons: Array<Record<string, unknown>>; failed_attempts: Array<Record<string, unknown>>; [key: string]: unknown }
  timings: { total_ms: number; ttft_ms?: number | null; [key: string]: unknown }
  cost_usd: number
  cache_savings_usd: number
}

export type WithLaneway<T> = T & { laneway: LanewayExtras }
/** A body with Laneway's options under `laneway` (snake_case: `slo`, `family`, `task_id`, ...). */
export type WithLanewayOptions<T> = T & { laneway?: Record<string, unknown> }

export interface CallOptions {
  /** Cancels the call. */
  signal?: AbortSignal
  /** The call's deadline in milliseconds. */
  timeout?: number
  /** Not sent (Laneway signs its own requests): said in the decision. */
  headers?: Record<string, string>
  /** Not sent: said in the decision. */
  query?: Record<string, string>
}

/** A streamed answer: `for await`; `controller.abort()` ends it and cancels the request. */
export class Stream<Item> implements AsyncIterable<Item> {
  controller: AbortController
  [Symbol.asyncIterator] (): AsyncIterator<Item>
  /** The events as newline-delimited JSON, as the SDK's `toReadableStream`. */
  toReadableStream (): ReadableStream
}

export interface OpenAIOptions extends RouterOptions {
  /** A router to use instead of building one. */
  router?: Router
  /** A Bedrock API key (`ABSK...` or `bedrock-api-key-...`); any other key is warned of. */
  apiKey?: string
  /** Each call's deadline in milliseconds. */
  timeout?: number
  /** The SDK's options that mean nothing to Laneway: warned of, not used. */
  baseURL?: string
  maxRetries?: number
  organization?: string
  project?: string
  defaultHeaders?: Record<string, string>
}

export class OpenAI {
  constructor (options?: OpenAIOptions)
  readonly router: Router
  chat: {
    completions: {
      create (body: WithLanewayOptions<ChatCompletionCreateParamsNonStreaming>, options?: CallOptions): Promise<WithLaneway<ChatCompletion>>
      create (body: WithLanewayOptions<ChatCompletionCreateParamsStreaming>, options?: CallOptions): Promise<Stream<ChatCompletionChunk & { laneway?: LanewayExtras }>>
    }
  }
  responses: {
    create (body: WithLanewayOptions<ResponseCreateParamsNonStreaming>, options?: CallOptions): Promise<WithLaneway<OpenAIResponse>>
    create (body: WithLanewayOptions<ResponseCreateParamsStreaming>, options?: CallOptions): Promise<Stream<ResponseStreamEvent>>
  }
}

/** A real `openai` client (the app's own `openai` package, which must be installed) whose
 * requests `router` answers in process through `laneway.fetch`; the SDK's retries are off.
 * `options` are the SDK's constructor options (`fallback`: where requests Laneway does not
 * answer go). */
export function client (router: Router, options?: Record<string, unknown> & { fallback?: typeof fetch }): OpenAISDK

export default OpenAI
