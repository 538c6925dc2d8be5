"""The `Router`: keyword arguments, dicts or a TOML path in; typed results out."""

from __future__ import annotations

import asyncio
import logging
import os
import weakref
from typing import Any, AsyncIterator, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Union

from . import _laneway, _logs, _metrics, _otel
from ._laneway import BatchHandle, StreamEvent
from ._types import Request, Response

RequestLike = Union[str, Request, Mapping[str, Any]]


_dispatchers: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _laneway.Dispatcher]" = weakref.WeakKeyDictionary()


def _dispatcher() -> "_laneway.Dispatcher":
    """The running loop's bridge to the Rust runtime (one per loop and process)."""
    loop = asyncio.get_running_loop()
    d = _dispatchers.get(loop)
    if d is None or d.pid != os.getpid():
        d = _laneway.Dispatcher(loop)
        loop.add_reader(d.fileno(), d.drain)
        _dispatchers[loop] = d
    return d


def _request(request: Optional[RequestLike], kwargs: Dict[str, Any]) -> Dict[str, Any]:
    if isinstance(request, str):
        return {**kwargs, "prompt": request}
    if isinstance(request, Request):
        if kwargs:
            raise TypeError("give a Request or keyword arguments, not both")
        return request.to_dict()
    if request is None:
        return dict(kwargs)
    if kwargs:
        raise TypeError("give a request dict or keyword arguments, not both")
    return dict(request)


class Router:
    """Routes calls per their SLO. Build it with keyword arguments:

    - `config`: a dict of configuration (the TOML layout of README), TOML text, or a path to a
      TOML file (a path that does not exist is a `ConfigError`); omitted, the built-in one;
    - `endpoint_url`: send every call there (the emulator) instead of AWS;
    - `access_key_id` / `secret_access_key`: static credentials; omitted, AWS's default chain;
    - `bedrock_api_key`: a Bedrock API key for Bedrock's OpenAI-compatible endpoints (sent as a
      bearer token; `AWS_BEARER_TOKEN_BEDROCK` is read too).

    `await router.generate(...)` and `async for event in router.stream(...)` are the async API;
    `generate_sync` and `stream_sync` block (the GIL is released while Rust works). A request is
    a prompt string with keyword arguments (`family=`, `model=`, `slo=`, `max_tokens=`, ... as in
    `laneway.Request`), a `Request`, or a dict in the core's shape.
    """

    def __init__(
        self,
        config: Union[None, str, "os.PathLike[str]", Mapping[str, Any]] = None,
        *,
        endpoint_url: Optional[str] = None,
        access_key_id: Optional[str] = None,
        secret_access_key: Optional[str] = None,
        bedrock_api_key: Optional[str] = None,
    ):
        options: Dict[str, Any] = {}
        if config is not None:
            options["config"] = dict(config) if isinstance(config, Mapping) else os.fspath(config)
        for key, value in (("endpoint_url", endpoint_url), ("access_key_id", access_key_id), ("secret_access_key", secret_access_key), ("bedrock_api_key", bedrock_api_key)):
            if value is not None:
                options[key] = value
        _logs.start()
        self._native = _laneway.NativeRouter(options)
        self._instruments: Optional[_metrics._Instruments] = None
        self._record_logs: Optional[Any] = None
        if _metrics.global_provider_set():
            try:
                self.instrument()
            except Exception as e:  # the app's metrics must not stop its router
                logging.getLogger("laneway").warning("laneway: metrics not recorded on the global meter provider: %s", e)

    def instrument(self, meter_provider: Any = None) -> None:
        """Records Laneway's metrics on `meter_provider`'s meter `laneway` (the global meter
        provider when omitted): the same instruments, units and attributes as the Rust side
        (`gen_ai.client.operation.duration`, `gen_ai.client.token.usage`,
        `gen_ai.client.operation.time_to_first_chunk`, `laneway.cost`, `laneway.errors`,
        `laneway.attempt.errors`, `laneway.breaker.state`, ...). A router made after the
        application set its global meter provider is instrumented already; calling this again
        moves the metrics to the new provider. Needs `opentelemetry-api`."""
        # The old instruments get what was measured before this call, the new ones what follows.
        if self._instruments is not None:
            self._instruments.close()
            self._instruments = None
        self._instruments = _metrics.instrument(self, meter_provider)

    async def converse(self, **kwargs: Any) -> Dict[str, Any]:
        """boto3's `converse(**kwargs)`, routed: the same keyword arguments (`modelId`,
        `messages`, `system`, `inferenceConfig`, `toolConfig`, `serviceTier`, `outputConfig`,
        `additionalModelRequestFields` with Claude's `thinking` or Nova 2's `reasoningConfig`,
        `additionalModelResponseFieldPaths`, `requestMetadata`), plus `laneway=` for Laneway's
        own options (`slo`, `task_id`, `residency`, `reasoning`, `model={"family": ...}`, ...).
        Returns boto3's response dict (reasoning blocks included), with Laneway's decision,
        timings and cost under `"laneway"`. `guardrailConfig` and `guardContent` go as they are;
        `promptVariables` (prompt-management prompts, not routed by Laneway) is refused by name."""
        return await self._native.converse(kwargs, _dispatcher())

    def converse_sync(self, **kwargs: Any) -> Dict[str, Any]:
        """`converse`, blocking: a drop-in for `boto3.client("bedrock-runtime").converse`."""
        return self._native.converse_blocking(kwargs)

    async def generate(self, request: Optional[RequestLike] = None, /, **kwargs: Any) -> Response:
        """Sends a request and returns the whole answer. Cancelling the task cancels the call.
        With an OpenTelemetry tracer provider installed, the call is a span of the caller's
        trace (`laneway._otel`)."""
        req = _request(request, kwargs)
        span = _otel.start(req, stream=False)
        try:
            answer = await self._native.generate(req, _dispatcher())
        except BaseException as e:
            if span is not None:
                span.fail(e)
            raise
        if span is not None:
            span.finish(answer)
        return Response(answer)

    def generate_sync(self, request: Optional[RequestLike] = None, /, **kwargs: Any) -> Response:
        """`generate`, blocking."""
        req = _request(request, kwargs)
        span = _otel.start(req, stream=False)
        try:
            answer = self._native.generate_blocking(req)
        except BaseException as e:
            if span is not None:
                span.fail(e)
            raise
        if span is not None:
            span.finish(answer)
        return Response(answer)

    async def stream(self, request: Optional[RequestLike] = None, /, **kwargs: Any) -> AsyncIterator[StreamEvent]:
        """Streams the answer: text deltas, then a `completed` event with the whole `Response`."""
        req = _request(request, kwargs)
        span = _otel.start(req, stream=True)
        native = self._native.stream(req)
        try:
            while True:
                # Every event already available comes in one batch: one hand-over per burst.
                batch = await native.next_batch(_dispatcher())
                if not batch:
                    return
                for event in batch:
                    if span is not None and event.type == "completed" and event.response is not None:
                        span.finish(event.response._d)
                    yield event
        except BaseException as e:
            # A caller that stops reading (or is cancelled) is not a failed call.
            if span is not None and not isinstance(e, (GeneratorExit, asyncio.CancelledError)):
                span.fail(e)
            raise
        finally:
            native.close()
            if span is not None:
                # A stream dropped before its end: the span ends, said cancelled.
                span.cancelled()

    def stream_sync(self, request: Optional[RequestLike] = None, /, **kwargs: Any) -> Iterator[StreamEvent]:
        """`stream`, blocking: an iterator of events (read ahead in bursts, without the GIL).
        Dropping it, or calling its `close()`, cancels the call."""
        return self._native.stream(_request(request, kwargs))

    # The batch lane. A request here needs SLO class batch (`slo="batch"`); the router's
    # configuration needs a `[batch]` section (bucket, role_arn).

    def batch_session(self) -> "BatchSession":
        """Collects batch requests for one submission: `session.push(...)`, then
        `await session.submit()` (or `submit_sync()`)."""
        return BatchSession(self._native.batch_session())

    async def submit_batch(self, requests: Iterable[RequestLike]) -> BatchHandle:
        """Submits requests to the batch lane (Bedrock batch jobs at the batch price; requests
        that cannot wait, or too few for a job, go to flex now). `handle.to_json()` keeps it."""
        return await self._native.submit_batch([_request(r, {}) for r in requests], _dispatcher())

    def submit_batch_sync(self, requests: Iterable[RequestLike]) -> BatchHandle:
        """`submit_batch`, blocking."""
        return self._native.submit_batch([_request(r, {}) for r in requests])

    async def batch_status(self, handle: BatchHandle) -> Dict[str, Any]:
        """Every job's state: `{"jobs": [...], "done": n, "total": n, "finished": bool}`."""
        return await self._native.batch_status(handle, _dispatcher())

    def batch_status_sync(self, handle: BatchHandle) -> Dict[str, Any]:
        return self._native.batch_status(handle)

    async def wait_batch(self, handle: BatchHandle, progress: Optional[Callable[[Dict[str, Any]], None]] = None) -> Dict[str, Any]:
        """Polls until every job has ended (every `[batch] poll_interval`), calling
        `progress(status)` after each poll; returns the last status. An exception raised by
        `progress` ends the wait and propagates."""
        return await self._native.wait_batch(handle, progress, _dispatcher())

    def wait_batch_sync(self, handle: BatchHandle, progress: Optional[Callable[[Dict[str, Any]], None]] = None) -> Dict[str, Any]:
        return self._native.wait_batch(handle, progress)

    async def batch_results(self, handle: BatchHandle) -> List[Dict[str, Any]]:
        """One item per request, in submission order: `{"output": {"text", "usage",
        "cost_usd", "model", "lane", "diverted"}}` or `{"error": {"kind", "error_kind", "code",
        "message"}}`. Fails if a job has not ended."""
        return await self._native.batch_results(handle, _dispatcher())

    def batch_results_sync(self, handle: BatchHandle) -> List[Dict[str, Any]]:
        return self._native.batch_results(handle)

    async def cancel_batch(self, handle: BatchHandle) -> int:
        """Stops the jobs that have not ended; how many were stopped."""
        return await self._native.cancel_batch(handle, _dispatcher())

    def cancel_batch_sync(self, handle: BatchHandle) -> int:
        return self._native.cancel_batch(handle)

    def plan(self, request: Optional[RequestLike] = None, /, **kwargs: Any) -> Dict[str, Any]:
        """The plan for a request (model, attempts, reasons, cache checkpoints) without sending it."""
        return self._native.plan(_request(request, kwargs))

    def metrics(self) -> Dict[str, Any]:
        """Everything measured so far: per-lane latency percentiles (seconds), tokens, cost,
        errors, failovers and hedges; SLO attainment per class; calls in flight; task costs."""
        return self._native.metrics()

    def prometheus(self) -> str:
        """The metrics as Prometheus text (GenAI semantic-convention names where they exist)."""
        return self._native.prometheus()

    def finish_task(self, task_id: str, success: bool) -> bool:
        """Closes a task (the calls that carried `task_id`): its cost joins the per-task and
        per-successful-task figures, and its outcome is feedback on each of its calls that a
        family's router chose. False if no call named it."""
        return self._native.finish_task(task_id, success)

    def feedback(self, call_id: str, good: bool) -> None:
        """Says whether a call's answer was good (`call_id` is `response.decision.call_id`):
        its family's router updates the served variant's success estimate for the prompt's
        kind and difficulty, and moves later such prompts within the family's
        `quality_loss_budget`. Raises `InvalidRequestError` for a malformed id or a call no
        family router chose."""
        self._native.feedback(call_id, good)

    def feedback_report(self) -> Dict[str, Any]:
        """What the family routers have learned from feedback: per family, each cell (task
        kind and difficulty band) with outcomes: every variant's decayed good and total
        outcomes and each cheaper variant's verdict."""
        return self._native.feedback_report()

    def advice(self) -> Dict[str, Any]:
        """The changes the calls `[record]` sampled since the router started support, ranked
        by projected monthly saving: each with its `action` (in configuration terms), `patch`
        (the change as a configuration table), `monthly_saving_usd`, `risk` and `evidence`;
        per class its calls, attainment and cost; and what was `not_assessed`. Raises
        `ConfigError` without a `[record]` table (its `path` is optional)."""
        return self._native.advice()

    def flush_record(self, timeout: float = 5.0) -> bool:
        """Waits at most `timeout` seconds until `[record]`'s lines of the calls finished so
        far are written (to its file, to what `advice()` reads, and to the app's logs after
        `record_logs`); whether they all were. For a process about to exit. True at once
        without `[record]`."""
        done = self._native.flush_record(timeout)
        if self._record_logs is not None:
            self._record_logs.drain_now()
        return done

    def record_logs(self, logger_provider: Any = None) -> None:
        """Sends `[record]`'s lines to `logger_provider` (the global logger provider when
        omitted) as OpenTelemetry log records: one per line, event name
        `laneway.record.call` (and `.outcome`, `.load`, `.header`), body the line's JSON, as a
        trace file holds it. Calling it again moves them to the new provider. Raises
        `ConfigError` without a `[record]` table. Needs `opentelemetry-api`."""
        from . import _record_logs

        if self._record_logs is not None:
            self._record_logs.close()
            self._record_logs = None
        self._record_logs = _record_logs.record_logs(self, logger_provider)

    def cache_totals(self) -> Dict[str, Any]:
        """Prompt-cache totals per family since the router started."""
        return self._native.cache_totals()


class BatchSession:
    """Requests of SLO class batch collected for one submission (`Router.batch_session()`)."""

    __slots__ = ("_native",)

    def __init__(self, native: "_laneway.NativeBatchSession"):
        self._native = native

    def push(self, request: Optional[RequestLike] = None, /, **kwargs: Any) -> int:
        """Adds a request (as `generate` takes one); its index is its place in the results."""
        return self._native.push(_request(request, kwargs))

    def __len__(self) -> int:
        return len(self._native)

    async def submit(self) -> BatchHandle:
        return await self._native.submit(_dispatcher())

    def submit_sync(self) -> BatchHandle:
        return self._native.submit()
