"""Each call as a span in the caller's OpenTelemetry trace, when the app has installed an
OpenTelemetry SDK (`opentelemetry-api` and a tracer provider): a CLIENT span named
`chat {model}`, child of the caller's current span, with the GenAI semantic conventions'
attributes and Laneway's own (`laneway.*`: SLO class, tier sent and served, region, target,
reasons, attempts, cost), an event per failover and hedge, and the error kind on failure. The
attribute mapping is the core's (`laneway::surface::otel`); the span is the app's tracer
provider's, exported however the app exports. Without the API, or with no provider installed,
nothing is done.

Where the app's own instrumentation already opened a GenAI span around the very call (the
botocore or `openai` instrumentations, over Laneway's seams), Laneway adds its attributes and
events to that span instead of writing a second one.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable, Dict, Optional

from . import _laneway

try:
    from opentelemetry import trace as _trace
    from opentelemetry.trace import SpanKind, StatusCode
except ImportError:  # the app does not use OpenTelemetry
    _trace = None  # type: ignore[assignment]

_tracer: Any = None


def _provider_installed() -> bool:
    if _trace is None:
        return False
    provider = _trace.get_tracer_provider()
    return not isinstance(provider, (_trace.ProxyTracerProvider, _trace.NoOpTracerProvider))


def _get_tracer() -> Any:
    global _tracer
    if _tracer is None:
        from . import __version__

        _tracer = _trace.get_tracer("laneway", __version__, schema_url=_laneway._otel_schema_url())
    return _tracer


class CallSpan:
    """The span of one call; `finish` or `fail` ends it (once)."""

    __slots__ = ("_span", "_own", "_done")

    def __init__(self, span: Any, own: bool):
        self._span = span
        self._own = own
        self._done = False

    def _end(self, end: Dict[str, Any]) -> None:
        span = self._span
        attributes = {k: v for k, v in end["attributes"].items() if v is not None}
        if not self._own:
            # The instrumentation's span already says provider, model and usage its way.
            attributes = {k: v for k, v in attributes.items() if k.startswith("laneway.")}
        span.set_attributes(attributes)
        for event in end["events"]:
            span.add_event(event["name"], {k: v for k, v in event["attributes"].items() if v is not None})

    def conclude(self, end: Dict[str, Any]) -> None:
        """Ends the span with what the core made of the call's end (a seam's answer): an
        `error.type` among its attributes is a failure."""
        if self._done:
            return
        self._done = True
        try:
            self._end(end)
            kind = end["attributes"].get("error.type")
            if kind is not None and self._own:
                self._span.set_status(StatusCode.ERROR, str(kind))
        finally:
            if self._own:
                self._span.end()

    def finish(self, response: Dict[str, Any]) -> None:
        if self._done:
            return
        self._done = True
        try:
            self._end(_laneway._otel_finish(response))
        finally:
            if self._own:
                self._span.end()

    def cancelled(self) -> None:
        """The caller stopped reading before the end: not an error of the call."""
        if self._done:
            return
        self._done = True
        self._span.set_attribute("laneway.cancelled", True)
        if self._own:
            self._span.end()

    def fail(self, error: BaseException) -> None:
        if self._done:
            return
        self._done = True
        try:
            details = getattr(error, "details", None)
            if isinstance(details, dict):
                self._end(_laneway._otel_failed(details))
            else:
                self._span.set_attribute("error.type", type(error).__qualname__)
            if self._own:
                self._span.record_exception(error)
                self._span.set_status(StatusCode.ERROR, str(getattr(error, "kind", type(error).__name__)))
        finally:
            if self._own:
                self._span.end()


def _open(start: Callable[[], Optional[Dict[str, Any]]]) -> Optional[CallSpan]:
    """The call's span: the GenAI span the app's instrumentation opened around it, else a new
    CLIENT span from `start()` (`{name, attributes}`, or `None` for no call)."""
    current = _trace.get_current_span()
    attributes = getattr(current, "attributes", None)
    if current.is_recording() and attributes and attributes.get("gen_ai.operation.name"):
        return CallSpan(current, own=False)
    opened = start()
    if opened is None:
        return None
    span = _get_tracer().start_span(opened["name"], kind=SpanKind.CLIENT, attributes=opened["attributes"])
    if not span.is_recording():
        span.end()
        return None
    return CallSpan(span, own=True)


def start_http(method: str, path: str, headers: Any, body: bytes) -> Optional[CallSpan]:
    """The span of a call a seam answers (botocore's before-send, an httpx transport), from
    the HTTP request; `None` when no tracer provider is installed."""
    if not _provider_installed():
        return None
    return _open(lambda: _laneway._otel_start_http(method, path, list(headers), body))


def conclude_http(span: Optional[CallSpan], answer: Any) -> Any:
    """Ends a seam call's span with its answer (`(status, headers, body, span_end)`): now for a
    whole answer, at the end of its body for a stream. Returns the answer as the seam reads
    it, `(status, headers, body)`."""
    status, headers, body, end = answer
    if span is None:
        return status, headers, body
    if isinstance(body, (bytes, bytearray)):
        if end is not None:
            span.conclude(end)
        else:
            span.cancelled()
        return status, headers, body
    return status, headers, SpannedBody(body, span)


def answer_http(span: Optional[CallSpan], answer: Callable[[], Any]) -> Any:
    """A seam's blocking answer with its span: `answer()`'s `(status, headers, body)`, the
    span failed if it raises."""
    try:
        got = answer()
    except BaseException as e:
        if span is not None:
            span.fail(e)
        raise
    return conclude_http(span, got)


async def aanswer_http(span: Optional[CallSpan], answer: Any) -> Any:
    """`answer_http` for an awaited answer."""
    try:
        got = await answer
    except BaseException as e:
        if span is not None:
            span.fail(e)
        raise
    return conclude_http(span, got)


class SpannedBody:
    """A streamed answer's `NativeBody` whose span ends with it: with the call's end when read
    to the last chunk or closed after it, as cancelled when closed, dropped or failed before."""

    __slots__ = ("_body", "_span", "__weakref__")

    def __init__(self, body: Any, span: CallSpan):
        self._body = body
        self._span = span
        # A body let go unread still ends its span (ending twice is a no-op).
        weakref.finalize(self, span.cancelled)

    def _ended(self) -> None:
        end = self._body.span_end()
        if end is not None:
            self._span.conclude(end)
        else:
            self._span.cancelled()

    async def _watched(self, chunk: Any) -> Any:
        try:
            got = await chunk
        except BaseException as e:
            self._span.fail(e)
            raise
        if got is None:
            self._ended()
        return got

    def next_chunk(self, dispatcher: Any) -> Any:
        return self._watched(self._body.next_chunk(dispatcher))

    def __iter__(self) -> "SpannedBody":
        return self

    def __next__(self) -> bytes:
        try:
            return next(self._body)
        except StopIteration:
            self._ended()
            raise
        except BaseException as e:
            self._span.fail(e)
            raise

    def decision_headers(self) -> Any:
        return self._body.decision_headers()

    def span_end(self) -> Any:
        return self._body.span_end()

    def close(self) -> None:
        # A reader that stops at the protocol's own end (`[DONE]`) closes a completed call.
        end = self._body.span_end()
        try:
            self._body.close()
        finally:
            if end is not None:
                self._span.conclude(end)
            else:
                self._span.cancelled()


def start(request: Dict[str, Any], stream: bool) -> Optional[CallSpan]:
    """The span of a call about to be sent, in the caller's current context; `None` when no
    tracer provider is installed."""
    if not _provider_installed():
        return None
    return _open(lambda: _laneway._otel_start(request, stream))
