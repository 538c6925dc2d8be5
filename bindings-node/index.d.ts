// Types of the `laneway` package (hand-written over the native addon, which speaks JSON).

export type SloClass = 'interactive' | 'standard' | 'background' | 'batch'

export type Bytes = Uint8Array | string
export type CachePoint = { cache_point: { ttl?: '5m' | '1h' } }
/** Where an image or a document comes from: its bytes, or an S3 object. */
export type MediaSource = { bytes: Bytes } | { s3: { uri: string; bucket_owner?: string } }
/** A content block in the core's shape. */
export type ContentBlock =
  | { text: string }
  /** Inline bytes, or an object in S3 (`s3: { uri: 's3://bucket/key', bucket_owner }`). */
  | { image: { format: 'png' | 'jpeg' | 'gif' | 'webp' } & MediaSource }
  /** At most 5 a request, 4.5 MB each; `name`: letters, digits, single spaces, `-()[]`. */
  | { document: { format: 'pdf' | 'csv' | 'doc' | 'docx' | 'xls' | 'xlsx' | 'html' | 'txt' | 'md'; name: string; context?: string; citations?: boolean } & MediaSource }
  | { tool_use: { id: string; name: string; input: unknown } }
  /** A tool's result: text, JSON, or an image, document, video or search results it returned (Bedrock only; a SageMaker container takes text and JSON). */
  | { tool_result: { tool_use_id: string; content: Array<{ text: string } | { json: unknown } | { image: { format: 'png' | 'jpeg' | 'gif' | 'webp' } & MediaSource } | { document: { format: string; name: string } & MediaSource } | { video: { format: string; source: { bytes: Bytes } | { s3: { uri: string; bucket_owner?: string } } } } | { search_result: { source: string; title: string; content: string[]; citations?: boolean } }>; is_error?: boolean } }
  | CachePoint
export type MessageInput = { role: 'user' | 'assistant'; text: string } | { role: 'user' | 'assistant'; content: ContentBlock[] }
export type SystemBlock = { text: string } | CachePoint
export type ToolInput = { name: string; description?: string; inputSchema: Record<string, unknown> } | { spec: { name: string; description?: string; input_schema: Record<string, unknown> } } | CachePoint
export type ToolChoice = 'auto' | 'any' | { tool: string }

/** A request: a prompt or messages, and where and how to send it. */
export interface RequestOptions {
  prompt?: string
  messages?: MessageInput[]
  /** A model or inference-profile id (pins it). */
  model?: string
  /** A configured family: the plan picks the variant. */
  family?: string
  system?: string | SystemBlock[]
  tools?: ToolInput[]
  toolChoice?: ToolChoice
  maxTokens?: number
  temperature?: number
  topP?: number
  stopSequences?: string[]
  slo?: SloClass
  ttftTargetMs?: number
  deadlineMs?: number
  taskId?: string
  tier?: ServiceTier
  /** A geography's name (`'eu'`, `'jp'`, or one configured under `[geographies]`), a list of regions, or the core's shape. */
  residency?: string | string[] | { geography: string } | { regions: string[] }
  minVariant?: string
  cache?: 'auto' | 'off'
  continueOnInterrupt?: boolean
  /** Reasoning (extended thinking), as each model spells it: an effort, a token budget, or both. */
  reasoning?: 'low' | 'medium' | 'high' | 'max' | { effort?: 'low' | 'medium' | 'high' | 'max'; budgetTokens?: number }
  /** A JSON schema (an object schema) the answer's text conforms to (structured output). */
  outputSchema?: Record<string, unknown>
  /** Key-value pairs Bedrock logs with the call (`requestMetadata`). */
  metadata?: Record<string, string>
  /** A Bedrock guardrail to apply; `response.toJSON().guardrail_trace` says what it did. */
  guardrail?: { identifier: string; version: string; trace?: 'enabled' | 'disabled' | 'enabled_full'; streamMode?: 'sync' | 'async' }
  /** Fields written for one model (`additionalModelRequestFields`), sent only to it. */
  modelFields?: { model: string; request: Record<string, unknown>; responsePaths?: string[] }
}

export interface CallOptions { signal?: AbortSignal }

export class Response {
  readonly text: string
  readonly toolUses: Array<{ id: string; name: string; input: unknown }>
  /** The model's readable reasoning, concatenated ('' without it, or when redacted). */
  readonly reasoningText: string
  readonly stopReason: string
  readonly usage: Usage
  readonly timings: Timings
  readonly decision: Decision
  readonly costUsd: number
  readonly cacheSavingsUsd: number
  /** The response in the core's schema (snake_case, durations in ms). */
  toJSON (): ResponseJSON
}

/** A response in the core's binding-neutral schema (`laneway::surface`). */
export interface ResponseJSON {
  content: Array<
    | { text: string }
    | { tool_use: { id: string; name: string; input: unknown } }
    | { reasoning: { text: { text: string; signature?: string } } | { redacted: string } }
  >
  stop_reason: string
  usage: { input_tokens: number; output_tokens: number; cache_read_tokens: number; cache_write_tokens: number; cache_write_1h_tokens: number; reasoning_tokens: number; input_estimated: boolean }
  timings: {
    ttft_ms?: number
    ttft_reasoning_ms?: number | null
    ttft_answer_ms?: number | null
    inter_token?: { mean_ms: number; p50_ms: number; p90_ms: number; max_ms: number }
    total_ms: number
    output_tokens_per_second: number | null
  }
  decision: Record<string, unknown>
  cost_usd: number
  cache_savings_usd: number
  /** The model-specific response fields the request asked for. */
  model_response_fields?: Record<string, unknown>
  /** The guardrail's assessment, in Converse's shape (`trace.guardrail`). */
  guardrail_trace?: Record<string, unknown>
}

/** An error as data (`error.details`), the core's `ErrorDetails`: only the keys that apply. */
export interface ErrorDetails {
  kind: string
  message: string
  code?: string
  field?: string
  target?: string
  region?: string
  http_status?: number
  request_id?: string
  retry_after_ms?: number
  attempts?: Array<Record<string, unknown>>
  budget_exhausted?: boolean
  delivered?: Record<string, number>
  cause?: ErrorDetails
}

export type StreamEvent =
  | { type: 'text_delta'; text: string; data: { index: number; text: string } }
  | { type: 'tool_use_start' | 'tool_use_delta' | 'reasoning_delta' | 'continued'; data: Record<string, unknown> }
  | { type: 'completed'; response: Response; data: Record<string, unknown> }

export interface RouterOptions {
  /** Configuration: an object in the TOML layout, TOML text, or a path to a TOML file (one
   * that does not exist is a `ConfigError`). */
  config?: Record<string, unknown> | string
  /** A path to a TOML file, named as one (instead of `config`). */
  configPath?: string
  /** Send every call here (the emulator) instead of AWS. */
  endpointUrl?: string
  accessKeyId?: string
  secretAccessKey?: string
  /** A Bedrock API key, sent as the bearer token to Bedrock's OpenAI-compatible endpoints. */
  bedrockApiKey?: string
  /** Where Laneway's logs go (the core's warnings: shared state degraded and why, a local state
   * file unread, ...): an object with `error`, `warn`, `info` and `debug` functions, each
   * called with the message and `{ logger, fields, repeated }`. Omitted: the console, for
   * warnings and errors; `null`: nowhere. Logs are process-wide: each router's logger gets them. */
  logger?: Logger | null
  /** The most verbose level `logger` gets (default `'warn'`). */
  logLevel?: 'error' | 'warn' | 'info' | 'debug' | 'trace'
}

/** A logger for Laneway's records (`console`, pino, winston and bunyan loggers fit). */
export interface Logger {
  error?: (message: string, meta: LogMeta) => void
  warn?: (message: string, meta: LogMeta) => void
  info?: (message: string, meta: LogMeta) => void
  debug?: (message: string, meta: LogMeta) => void
}

/** What comes with a log record: the core module's logger (`laneway.state.shared`), the
 * record's structured fields, and how many times the same warning was counted, not said, in
 * the minute before. */
export interface LogMeta {
  logger: string
  fields: Record<string, string>
  repeated: number
}

/** Records the core dropped because no logger took them in time. */
export function logDropped (): number

/** One change `advice()` proposes. */
export interface AdviceChange {
  change:
    | { kind: 'tier'; class: string; from: string; to: string }
    | { kind: 'cache_checkpoints'; class: string; model: string }
    | { kind: 'global_profile'; class: string }
    | { kind: 'spread_regions'; class: string; region: string }
  /** The change in configuration terms. */
  action: string
  /** The change as a configuration table (TOML's layout), where one expresses it. */
  patch: Record<string, any> | null
  monthly_saving_usd: number
  recorded_saving_usd: number
  risk: 'low' | 'medium' | 'high'
  risk_reason: string
  evidence: string[]
}

/** What the recorded calls support, ranked (`router.advice()`). */
export interface Advice {
  calls: number
  sample: number
  period_ms: number
  monthly_cost_usd: number
  classes: Record<string, { calls: number; attainment: number | null; cost_usd: number; ttft_p50_ms: number | null; ttft_p99_ms: number | null; peak_to_mean: number }>
  changes: AdviceChange[]
  not_assessed: string[]
}

export class Router {
  constructor (options?: RouterOptions)
  generate (request: string | RequestOptions, options?: RequestOptions & CallOptions): Promise<Response>
  /** The JavaScript SDK's `ConverseCommand` input as it is (plus `laneway` options); resolves to
   * its output shape with Laneway's decision, timings and cost under `laneway`. */
  converse (input: ConverseInput, options?: CallOptions): Promise<ConverseOutput>
  stream (request: string | RequestOptions, options?: RequestOptions & CallOptions): AsyncGenerator<StreamEvent, void, void>
  plan (request: string | RequestOptions, options?: RequestOptions): Record<string, any>
  cacheTotals (): Record<string, any>
  /** Per-lane latency percentiles, tokens, cost, errors; SLO attainment; in flight; task costs. */
  metrics (): { lanes: Array<[Record<string, any>, Record<string, any>]>; slo: Record<string, any>; tasks: { tasks: number; successful: number; cost_usd: number }; in_flight: number }
  prometheus (): string
  /**
   * Records Laneway's metrics on `meterProvider`'s meter `laneway` (the global one when
   * omitted): the instruments of the core's catalog, with `prometheus()`'s names and labels.
   * A router made after the app registered its meter provider is instrumented already.
   */
  instrument (meterProvider?: unknown): void
  finishTask (taskId: string, success: boolean): boolean
  /** Says whether a call's answer was good; its family's router learns from it. */
  feedback (callId: string, good: boolean): void
  /** Per family, each cell (task kind and difficulty band) with outcomes: decayed good and
   * total outcomes per variant and each cheaper variant's verdict. */
  feedbackReport (): Record<string, Array<{ kind: string; band: number; up_to_loss: number | null; outcomes: { good: number[]; total: number[]; verdicts: Array<'over_budget' | 'within_budget' | 'unknown'> } }>>
  /** The changes the calls `[record]` sampled support, ranked by projected monthly saving.
   * Throws `ConfigError` without a `[record]` table. */
  advice (): Advice
  /** Resolves once `[record]`'s lines of the calls finished so far are written (within
   * `timeoutMs`, default 5000): whether they all were. */
  flushRecord (timeoutMs?: number): Promise<boolean>
  /** Sends `[record]`'s lines to `loggerProvider` (the global one when omitted) as
   * OpenTelemetry log records, event name `laneway.record.<kind>`, body the line's JSON. */
  recordLogs (loggerProvider?: unknown): void
  /** Collects requests of SLO class `batch` for one submission. */
  batchSession (): BatchSession
  submitBatch (requests: Iterable<string | RequestOptions>): Promise<BatchHandle>
  batchStatus (handle: BatchHandle): Promise<BatchStatus>
  /** Polls until every job has ended; a `progress` that throws ends the wait with its error. */
  waitBatch (handle: BatchHandle, progress?: ((status: BatchStatus) => void) | null, options?: CallOptions): Promise<BatchStatus>
  batchResults (handle: BatchHandle): Promise<BatchItem[]>
  cancelBatch (handle: BatchHandle): Promise<number>
}

export interface BatchStatus {
  jobs: Array<{ arn: string; status: string; message: string | null }>
  done: number
  total: number
  finished: boolean
}

export interface BatchOutput {
  text: string
  usage: Usage
  costUsd: number
  model: string
  lane: 'batch' | 'flex'
  /** Why the request did not go to a batch job, when it did not. */
  diverted: string | null
}

export interface BatchRecordError {
  kind: 'record_failed' | 'call_failed' | 'missing' | 'unreadable_output' | 'malformed' | 'not_submitted' | 'diverted_elsewhere'
  errorKind?: string
  code?: string
  message: string
}

export type BatchItem = { output: BatchOutput } | { error: BatchRecordError }

/** A submitted batch; `JSON.stringify(handle)` keeps it, `BatchHandle.fromJSON(text)` resumes it. */
export class BatchHandle {
  readonly jobArns: string[]
  toJSON (): Record<string, unknown>
  static fromJSON (text: string | Record<string, unknown>): BatchHandle
}

export class BatchSession {
  /** Adds a request; returns its index in the results. */
  push (request: string | RequestOptions, options?: RequestOptions): number
  readonly length: number
  submit (): Promise<BatchHandle>
}

/** The JavaScript SDK's Converse input (`modelId`, `messages`, ...), plus Laneway's options. */
export interface ConverseInput {
  modelId?: string
  messages: Array<{ role: 'user' | 'assistant'; content: Array<Record<string, unknown>> }>
  system?: Array<Record<string, unknown>>
  inferenceConfig?: { maxTokens?: number; temperature?: number; topP?: number; stopSequences?: string[] }
  toolConfig?: { tools: Array<Record<string, unknown>>; toolChoice?: Record<string, unknown> }
  /** A tier's Converse name: a built-in one, or one the configuration declares under `[tiers]`. */
  serviceTier?: { type: 'priority' | 'default' | 'flex' | 'reserved' | 'ultrafast' | (string & {}) }
  performanceConfig?: { latency: 'standard' }
  /** Laneway's own options, in the core's keys: `slo`, `task_id`, `residency`, `model`, ... */
  laneway?: Record<string, unknown>
}

/** The JavaScript SDK's Converse output, with Laneway's decision beside it. */
export interface ConverseOutput {
  output: { message: { role: 'assistant'; content: Array<Record<string, unknown>> } }
  stopReason: string
  usage: { inputTokens: number; outputTokens: number; totalTokens: number; cacheReadInputTokens: number; cacheWriteInputTokens: number }
  metrics: { latencyMs: number }
  serviceTier?: { type: string }
  laneway: { decision: Record<string, unknown>; timings: Record<string, unknown>; cost_usd: number; cache_savings_usd: number }
}

/** Every error Laneway throws. `kind` is the stable error kind (e.g. `throttled`), `code` the
 * service's own error code (e.g. `ThrottlingException`) or null. */
export class LanewayError extends Error {
  readonly kind: string
  readonly code: string | null
  /** All details, as the core gives them (snake_case). */
  readonly details: Record<string, unknown>
  readonly field?: string
  readonly attempts?: Array<{ target: string; region: string; kind: string; code: string; message: string }>
  readonly budgetExhausted?: boolean
  /** `overloaded`: the wait for a slot it would have needed, what its deadline allowed, and
   * how long it waited in line, in milliseconds. */
  readonly waitNeededMs?: number
  readonly waitAllowedMs?: number
  readonly waitedMs?: number
  readonly delivered?: { deltas: number; text_chars: number; output_tokens: number }
  /** The details of the error that ended a stream. */
  readonly causeDetails?: Record<string, unknown>
  readonly target?: string
  readonly region?: string
  readonly httpStatus?: number
  readonly requestId?: string
  readonly retryAfterMs?: number
}
// <generated by laneway-codegen from the core's schema: do not edit; `cargo run -p laneway-codegen` rewrites it>
export type Api = 'converse' | 'openai-runtime' | 'openai-mantle' | 'invoke-endpoint' | 'own'
export type ServiceTier = 'priority' | 'standard' | 'flex' | 'reserved' | 'ultrafast' | (string & {})
/** Tokens of one call. */
export interface Usage {
  /** Input tokens read from the prompt cache. */
  cacheReadTokens: number
  /** Of `cache_write_tokens`, those written with the 1-hour TTL. */
  cacheWrite1hTokens: number
  /** Input tokens written to the prompt cache. */
  cacheWriteTokens: number
  /**
   * True when the service did not count the input and Laneway estimated it (some SageMaker
   * containers report no input count).
   */
  inputEstimated: boolean
  /** Input tokens processed anew (neither read from nor written to the cache). */
  inputTokens: number
  /** Tokens the model generated, reasoning included. */
  outputTokens: number
  /**
   * Of `output_tokens`, those the model spent reasoning, when the service says (the
   * OpenAI-compatible APIs' `reasoning_tokens`).
   */
  reasoningTokens: number
}
/**
 * How long the call took, as the caller saw it. Serialized in milliseconds (`ttft_ms`,
 * `total_ms`, ...), as every duration of the bindings' schema.
 */
export interface Timings {
  /** The longest gap (`max_ms`). */
  interTokenMaxMs: number | null
  /** The mean gap between content deltas (`mean_ms`). */
  interTokenMeanMs: number | null
  /** The median gap (`p50_ms`). */
  interTokenP50Ms: number | null
  /** The 90th-percentile gap (`p90_ms`). */
  interTokenP90Ms: number | null
  /** Output tokens per second from the first token to the last (streams only). */
  outputTokensPerSecond: number | null
  /** From the call to the last byte, failovers included. */
  totalMs: number
  /**
   * Time to the first token of the answer itself (text or a tool call), after any
   * reasoning (streams only).
   */
  ttftAnswerMs: number | null
  /**
   * Time to first token of any kind (reasoning or answer); measured on streams only (a
   * whole answer arrives at once).
   */
  ttftMs: number | null
  /** Time to the first reasoning token, for a call that reasoned (streams only). */
  ttftReasoningMs: number | null
}
/** Which target served a call, at which tier, and why. */
export interface Decision {
  /**
   * Which of the provider's APIs served it: Converse or one of Bedrock's OpenAI-compatible
   * APIs, SageMaker's InvokeEndpoint, or your own provider's.
   */
  api: Api
  /** Requests sent for this call: 1, plus retries, failovers and hedges. */
  attemptsSent: number
  /**
   * This call's id, unique; pass it to `Router::feedback` to say whether the answer was
   * good. It carries the family, the model that served and the prompt's difficulty band,
   * so feedback works from another process or after a restart.
   */
  callId: string
  /** The SageMaker endpoint, for SageMaker targets. */
  endpoint: string | null
  /** Attempts that failed before this one succeeded. */
  failedAttempts: Array<Record<string, unknown>>
  /** The family, when the request named one. */
  family: string | null
  /** Whether a hedge was sent, and who won. */
  hedge: Record<string, unknown> | null
  /**
   * When the target was a Bedrock prompt router: the model it invoked, as Bedrock reports it
   * (`trace.promptRouter.invokedModelId`).
   */
  invokedModel: string | null
  /** The configured model (the variant, for a family). */
  model: string
  /** Who served it: `bedrock`, `sagemaker` or your own provider's name. */
  provider: string
  /** Each choice and the alternatives rejected, in the order the plan made them. */
  reasons: Array<Record<string, unknown>>
  /** The region it was sent to (a cross-region profile may have processed it elsewhere). */
  region: string
  /** The tier the service says served, when it says. */
  servedTier: ServiceTier | null
  /** What was sent: the model id, inference-profile id or SageMaker endpoint name. */
  target: string
  /** The tier requested (Bedrock only). */
  tier: ServiceTier | null
}
/** The service is over capacity for this target (ThrottlingException, 429). */
export class ThrottledError extends LanewayError {}
/** The service or region is down (ServiceUnavailableException, 503). */
export class UnavailableError extends LanewayError {}
/** The model or endpoint is loading or cold (ModelNotReadyException). */
export class ModelNotReadyError extends LanewayError {}
/** The model or the connection took too long (ModelTimeoutException, client timeouts). */
export class TargetTimeoutError extends LanewayError {}
/** A transient failure inside the service (InternalServerException, InternalFailure, ...). */
export class ServiceInternalError extends LanewayError {}
/** The connection failed before an answer (refused, reset, DNS). */
export class TransportError extends LanewayError {}
/** The model failed on this input (ModelErrorException, SageMaker ModelError). */
export class ModelError extends LanewayError {}
/** The service refused the request as invalid (ValidationException, 400). */
export class ValidationError extends LanewayError {}
/** Permission was refused for this target (AccessDeniedException: say, a model not enabled in that region). */
export class AccessDeniedError extends LanewayError {}
/** The caller's credentials were refused or could not be had (ExpiredTokenException, UnrecognizedClientException, a bad or missing signature, a refused Bedrock API key, a credential chain that gave nothing). */
export class AuthenticationError extends LanewayError {}
/** The model, profile or endpoint does not exist (ResourceNotFoundException). */
export class NotFoundError extends LanewayError {}
/** An account quota was exceeded (ServiceQuotaExceededException). */
export class QuotaExceededError extends LanewayError {}
/** A stream failed after part of the answer had been delivered. */
export class StreamInterruptedError extends LanewayError {}
/** Every planned target was tried and failed. */
export class AllTargetsFailedError extends LanewayError {}
/** Every target the call may use was at its concurrency, and no slot could come within its deadline (the client-side queue, `[routing.concurrency]`): nothing more was sent. */
export class OverloadedError extends LanewayError {}
/** The configuration is malformed or contradictory. */
export class ConfigError extends LanewayError {}
/** The request is malformed; Laneway refused it before sending anything. */
export class InvalidRequestError extends LanewayError {}
/** A bug inside Laneway (a panic, or a value it could not convert). */
export class LanewayInternalError extends LanewayError {}
// </generated>
/** The call was cancelled through its `AbortSignal` (Node's own: no kind of the core's). */
export class AbortError extends LanewayError {}

export function toRequest (request: string | RequestOptions, options?: RequestOptions): Record<string, unknown>
export function version (): string

/** Options for a seam: where what Laneway does not answer goes. */
export interface FetchOptions {
  /** The `fetch` for every other request (the global `fetch` unless given). */
  fallback?: (input: any, init?: any) => Promise<globalThis.Response>
}

/** A WHATWG `fetch` that `router` answers Converse, ConverseStream, Chat Completions and
 * Responses requests on, in process (the `openai` SDK's `fetch` option, the Vercel AI SDK's
 * `createOpenAI({ fetch })` and `createAmazonBedrock({ fetch })`); the rest goes to
 * `options.fallback`. An `AbortSignal` in `init` cancels the call. */
export function fetch (router: Router, options?: FetchOptions): (input: any, init?: any) => Promise<globalThis.Response>

/** A request handler for the AWS SDK for JavaScript v3 (`new BedrockRuntimeClient({
 * requestHandler })`): Converse and ConverseStream answered by `router` in process, the rest
 * sent by `options.fallback` (the SDK's own Node handler). */
export function requestHandler (router: Router, options?: { fallback?: { handle (request: any, options?: any): Promise<{ response: any }> } }): {
  handle (request: any, options?: { abortSignal?: AbortSignal }): Promise<{ response: { statusCode: number; headers: Record<string, string>; body: any } }>
  updateHttpClientConfig (key: string, value: unknown): void
  httpHandlerConfigs (): Record<string, unknown>
  destroy (): void
  metadata: { handlerProtocol: string }
}

/** Runs `fn` with Laneway's request options (`slo`, `task_id`, `residency`, ...: a request's
 * `laneway` object) for every call made inside through a seam. */
export function withOptions<T> (options: Record<string, unknown>, fn: () => T): T

/** What Laneway decided for the last whole answer a seam gave inside the innermost
 * `withOptions` scope; null outside one. A stream's decision is on its last event instead. */
export function lastDecision (): { callId?: string; model?: string; target?: string; region?: string; tier?: string; attemptsSent?: number; costUsd?: number } | null
