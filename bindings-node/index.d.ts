// Types of the `laneway` package (hand-written over the native addon, which speaks JSON).

export type SloClass = 'interactive' | 'standard' | 'background' | 'batch'
export type ServiceTier = 'priority' | 'standard' | 'flex' | 'reserved'

export interface MessageInput { role: 'user' | 'assistant'; text: string }

/** A request: a prompt or messages, and where and how to send it. */
export interface RequestOptions {
  prompt?: string
  messages?: MessageInput[]
  /** A model or inference-profile id (pins it). */
  model?: string
  /** A configured family: the plan picks the variant. */
  family?: string
  system?: string
  maxTokens?: number
  temperature?: number
  topP?: number
  stopSequences?: string[]
  slo?: SloClass
  ttftTargetMs?: number
  deadlineMs?: number
  taskId?: string
  tier?: ServiceTier
  residency?: { geography: 'us' | 'eu' | 'apac' } | { regions: string[] }
  minVariant?: string
  cache?: 'auto' | 'off'
  continueOnInterrupt?: boolean
}

export interface CallOptions { signal?: AbortSignal }

export interface Usage { inputTokens: number; outputTokens: number; cacheReadTokens: number; cacheWriteTokens: number }
export interface Timings { ttftMs: number | null; totalMs: number; outputTokensPerSecond: number | null }
export interface Decision {
  model: string
  family: string | null
  target: string
  region: string
  tier: ServiceTier | null
  endpoint: string | null
  /** For a Bedrock prompt router: the model it chose. */
  invokedModel: string | null
  reasons: Array<Record<string, unknown>>
  failedAttempts: Array<{ target: string; region: string; kind: string; code: string; message: string }>
  attemptsSent: number
  hedge: Record<string, unknown> | null
}

export class Response {
  readonly text: string
  readonly toolUses: Array<{ id: string; name: string; input: unknown }>
  readonly stopReason: string
  readonly usage: Usage
  readonly timings: Timings
  readonly decision: Decision
  readonly costUsd: number
  readonly cacheSavingsUsd: number
  toJSON (): Record<string, unknown>
}

export type StreamEvent =
  | { type: 'text_delta'; text: string; data: { index: number; text: string } }
  | { type: 'tool_use_start' | 'tool_use_delta' | 'continued'; data: Record<string, unknown> }
  | { type: 'completed'; response: Response; data: Record<string, unknown> }

export interface RouterOptions {
  /** Configuration: an object in the TOML layout, or TOML text. */
  config?: Record<string, unknown> | string
  configPath?: string
  /** Send every call here (the emulator) instead of AWS. */
  endpointUrl?: string
  accessKeyId?: string
  secretAccessKey?: string
}

export class Router {
  constructor (options?: RouterOptions)
  generate (request: string | RequestOptions, options?: RequestOptions & CallOptions): Promise<Response>
  stream (request: string | RequestOptions, options?: RequestOptions & CallOptions): AsyncGenerator<StreamEvent, void, void>
  plan (request: string | RequestOptions, options?: RequestOptions): Record<string, any>
  cacheTotals (): Record<string, any>
  /** Per-lane latency percentiles, tokens, cost, errors; SLO attainment; in flight; task costs. */
  metrics (): { lanes: Array<[Record<string, any>, Record<string, any>]>; slo: Record<string, any>; tasks: { tasks: number; successful: number; cost_usd: number }; in_flight: number }
  prometheus (): string
  finishTask (taskId: string, success: boolean): boolean
}

/** Every error Laneway throws. `code` is the stable error kind, e.g. `throttled`. */
export class LanewayError extends Error {
  readonly code: string
  readonly attempts?: Array<{ target: string; region: string; kind: string; code: string; message: string }>
  readonly delivered?: { deltas: number; text_chars: number; output_tokens: number }
  /** The AWS error code (e.g. `ThrottlingException`), for an error from one target. */
  readonly awsCode?: string
  readonly target?: string
  readonly region?: string
  readonly httpStatus?: number | null
  readonly retryAfterMs?: number | null
}
export class ThrottledError extends LanewayError {}
export class UnavailableError extends LanewayError {}
export class ModelNotReadyError extends LanewayError {}
export class TargetTimeoutError extends LanewayError {}
export class ServiceInternalError extends LanewayError {}
export class TransportError extends LanewayError {}
export class ModelError extends LanewayError {}
export class ValidationError extends LanewayError {}
export class AccessDeniedError extends LanewayError {}
export class NotFoundError extends LanewayError {}
export class QuotaExceededError extends LanewayError {}
export class StreamInterruptedError extends LanewayError {}
export class AllTargetsFailedError extends LanewayError {}
export class ConfigError extends LanewayError {}
export class InvalidRequestError extends LanewayError {}
/** The call was cancelled through its `AbortSignal`. */
export class AbortError extends LanewayError {}
/** A bug inside Laneway (a panic, or a value it could not convert); `code` is 'internal_error'. */
export class LanewayInternalError extends LanewayError {}

export function toRequest (request: string | RequestOptions, options?: RequestOptions): Record<string, unknown>
export function version (): string
