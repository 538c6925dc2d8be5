"""Laneway under boto3 and botocore, unmodified: bedrock-runtime's Converse, ConverseStream,
InvokeModel and InvokeModelWithResponseStream calls (Anthropic Messages and Nova bodies)
answered in process, routed by Laneway, at botocore's own seam (a `before-send` handler
returning the service's bytes), so that everything above it (botocore's parsing, its
`EventStream`, `client.exceptions.ThrottlingException`, the framework that built the client)
runs as it does against AWS.

    import laneway, laneway.boto3

    router = laneway.Router()
    client = laneway.boto3.client(router)              # a real bedrock-runtime client
    client.converse(modelId="amazon.nova-lite-v1:0", messages=[...])

    session = laneway.boto3.session(router)            # for Strands' `boto_session=`
    laneway.boto3.install(router, some_client_or_session)   # one a framework built

Every other bedrock-runtime operation goes to AWS as it would have; so does a call for a model
the router's configuration does not route (said once in the `laneway` log), and every service
but bedrock-runtime. botocore's own retries stay off for the answers Laneway gives (it retried
already, within the call's budget and deadline), and on for the rest; aiobotocore cannot be
told so per answer, and `aio_client` builds its clients with one attempt instead. The calls Laneway answers
are not signed (nothing leaves the process, and no credentials are needed); the rest are, as
botocore signs them.

Laneway's own options (SLO, task id, residency, ...) reach a call made through a framework
that knows nothing of them with `laneway.options(...)`, around the call.
"""

import inspect
import logging
from typing import Any, Iterator, Optional, Union
from urllib.parse import quote, urlsplit

import botocore  # type: ignore[import-untyped]
import botocore.session  # type: ignore[import-untyped]
from botocore.awsrequest import AWSResponse  # type: ignore[import-untyped]

from . import _otel
from ._bodies import achunks, chunks
from ._context import header_value, remember
from ._router import _dispatcher

__all__ = ["client", "session", "botocore_session", "install", "aio_session", "aio_client"]

SERVICE = "bedrock-runtime"
#: The operations Laneway answers.
OPERATIONS = ("Converse", "ConverseStream", "InvokeModel", "InvokeModelWithResponseStream")
# Marks an answer Laneway gave, for the retry handler.
_ANSWERED = "x-laneway-answered"


def _false_ends_retries() -> bool:
    """Whether this botocore reads a retry handler's `False` as "do not retry" (older ones
    read any answer but `None` as a delay, and would retry at once, forever)."""
    try:
        from botocore.endpoint import Endpoint  # type: ignore[import-untyped]

        return "is False" in inspect.getsource(Endpoint._needs_retry)
    except (ImportError, OSError, TypeError, AttributeError):
        return False


_NO_RETRY: Optional[bool] = False if _false_ends_retries() else None


_log = logging.getLogger("laneway")
_told: set = set()


def _sent_on(path: str) -> None:
    """Says once per model that a call Laneway does not route went where it was going."""
    parts = path.split("/")
    ops = ("converse", "converse-stream", "invoke", "invoke-with-response-stream")
    model = parts[2] if len(parts) == 4 and parts[1] == "model" and parts[3] in ops else None
    if model is not None and model not in _told:
        _told.add(model)
        _log.info("bedrock-runtime calls for %s are sent to AWS: the router's configuration does not route this model", model)


class _Raw:
    """The raw body botocore reads an answer from (`stream()` for an event stream or an
    error, `read()` for InvokeModel's body), whole or streamed."""

    def __init__(self, body: Any):
        self._body = body
        self._left = body if isinstance(body, bytes) else b""

    def read(self, amt: Optional[int] = None, **_: Any) -> bytes:
        if amt is None or amt < 0:
            out, self._left = self._left, b""
        else:
            out, self._left = self._left[:amt], self._left[amt:]
        return out

    def stream(self, **_: Any) -> Iterator[bytes]:
        if isinstance(self._body, bytes):
            if self._body:
                yield self._body
            return
        yield from chunks(self._body)

    def close(self) -> None:
        if not isinstance(self._body, bytes):
            self._body.close()

    def release_conn(self) -> None:
        self.close()


#: Each operation's last path segment.
_PATHS = {
    "Converse": "converse",
    "ConverseStream": "converse-stream",
    "InvokeModel": "invoke",
    "InvokeModelWithResponseStream": "invoke-with-response-stream",
}


class _Handlers:
    """botocore event handlers bound to a router."""

    def __init__(self, router: Any):
        self._native = router._native

    def before_parameter_build(self, params: Any = None, model: Any = None, context: Any = None, **_: Any) -> None:
        # Whether Laneway answers this call, known from its model before botocore signs it.
        model_id = (params or {}).get("modelId")
        op = _PATHS.get(getattr(model, "name", ""))
        if context is not None and isinstance(model_id, str) and op is not None:
            path = f"/model/{quote(model_id, safe='')}/{op}"
            context["laneway_answers"] = self._native.http_answers("POST", path)

    def before_send(self, request: Any, **_: Any) -> Optional[AWSResponse]:
        path = urlsplit(request.url).path
        if not self._native.http_answers(request.method, path):
            _sent_on(path)
            return None
        headers, body = _request_parts(request)
        span = _otel.start_http(request.method, path, headers, body)
        status, answer_headers, payload = _otel.answer_http(
            span, lambda: self._native.http_blocking(request.method, path, headers, body, traced=span is not None)
        )
        remember(answer_headers)
        answer_headers.append((_ANSWERED, "1"))
        return AWSResponse(request.url, status, dict(answer_headers), _Raw(payload))

    def needs_retry(self, response: Any = None, **_: Any) -> Optional[bool]:
        # `False` from the most specific handler ends botocore's retries for this answer. (An
        # older botocore, which has no such answer, retries as configured: each retry is then
        # a new call to Laneway.)
        if response is not None and response[0] is not None and _ANSWERED in response[0].headers:
            return _NO_RETRY
        return None

    def choose_signer(self, context: Any = None, **_: Any) -> Any:
        # A call answered in process is not signed: nothing leaves the process, and it needs
        # no credentials. The rest is signed as botocore signs it.
        return botocore.UNSIGNED if context and context.get("laneway_answers") else None


class _AioContent:
    """What aiobotocore reads a body from (aiohttp's shape): chunks, or a read."""

    def __init__(self, body: Any):
        self._body = body
        self._left = body if isinstance(body, bytes) else None

    async def iter_chunks(self) -> Any:
        if isinstance(self._body, bytes):
            if self._body:
                yield self._body, True
            return
        async for chunk in achunks(self._body):
            yield chunk, True

    def at_eof(self) -> bool:
        return self._left == b""

    async def read(self, amt: int = -1) -> bytes:
        if self._left is None:
            self._left = b"".join([chunk async for chunk, _ in self.iter_chunks()])
        if amt is None or amt < 0:
            out, self._left = self._left, b""
        else:
            out, self._left = self._left[:amt], self._left[amt:]
        return out


class _AioRaw:
    """The raw body aiobotocore reads an answer from."""

    def __init__(self, body: Any):
        self._body = body
        self.content = _AioContent(body)

    async def read(self) -> bytes:
        return await self.content.read()

    def close(self) -> None:
        if not isinstance(self._body, bytes):
            self._body.close()

    def release_conn(self) -> None:
        self.close()


class _AioHandlers(_Handlers):
    """The handlers of an aiobotocore client or session: the call awaited on the event loop."""

    async def before_send(self, request: Any, **_: Any) -> Any:  # type: ignore[override]
        from aiobotocore.awsrequest import AioAWSResponse  # type: ignore[import-untyped,import-not-found,unused-ignore]

        path = urlsplit(request.url).path
        if not self._native.http_answers(request.method, path):
            _sent_on(path)
            return None
        headers, body = _request_parts(request)
        span = _otel.start_http(request.method, path, headers, body)
        status, answer_headers, payload = await _otel.aanswer_http(
            span, self._native.http(request.method, path, headers, body, _dispatcher(), traced=span is not None)
        )
        remember(answer_headers)
        answer_headers.append((_ANSWERED, "1"))
        return AioAWSResponse(request.url, status, dict(answer_headers), _AioRaw(payload))

    def needs_retry(self, response: Any = None, **_: Any) -> Optional[bool]:
        # aiobotocore reads any answer but None as a delay before retrying: none is given.
        # `aio_client` builds its clients with one attempt instead.
        return None


def _request_parts(request: Any) -> Any:
    """A botocore request's headers (with Laneway's options in scope) and body bytes."""
    headers = [(k, v.decode() if isinstance(v, bytes) else str(v)) for k, v in request.headers.items()]
    options = header_value()
    if options is not None:
        headers.append(("x-laneway", options))
    body = request.body
    if body is None:
        body = b""
    elif isinstance(body, str):
        body = body.encode()
    elif not isinstance(body, (bytes, bytearray)):
        body = body.read()
    return headers, bytes(body)


def _register(events: Any, handlers: _Handlers) -> None:
    # Installing again (another router) replaces the handlers: the latest router answers.
    for op in OPERATIONS:
        for event, handler, name in (
            (f"before-parameter-build.{SERVICE}.{op}", handlers.before_parameter_build, "params"),
            (f"before-send.{SERVICE}.{op}", handlers.before_send, "send"),
            (f"needs-retry.{SERVICE}.{op}", handlers.needs_retry, "retry"),
            (f"choose-signer.{SERVICE}.{op}", handlers.choose_signer, "signer"),
        ):
            unique_id = f"laneway-{name}-{op}"
            events.unregister(event, unique_id=unique_id)
            events.register(event, handler, unique_id=unique_id)


def install(router: Any, target: Any) -> Any:
    """Routes `target`'s Converse, ConverseStream, InvokeModel and InvokeModelWithResponseStream
    calls through `router`: a bedrock-runtime
    client (botocore or boto3), a boto3 `Session` or a botocore session (every bedrock-runtime
    client made from it afterwards). Returns `target`."""
    if hasattr(target, "meta") and hasattr(target.meta, "events"):
        _register(target.meta.events, (_AioHandlers if _is_aio(target) else _Handlers)(router))
        return target
    core = getattr(target, "_session", target)
    if not isinstance(core, botocore.session.Session):
        raise TypeError(f"laneway.boto3.install takes a client or a session, not {type(target).__name__}")
    _register(core, (_AioHandlers if _is_aio(core) else _Handlers)(router))
    return target


def _is_aio(target: Any) -> bool:
    """Whether `target` is aiobotocore's (an `AioSession` or a client it made)."""
    return any(c.__module__.startswith("aiobotocore") for c in type(target).__mro__)


def aio_session(router: Any, **kwargs: Any) -> Any:
    """An aiobotocore `AioSession` (its keyword arguments) whose bedrock-runtime clients are
    routed, for async code and frameworks that take an aiobotocore client or session."""
    from aiobotocore.session import AioSession  # type: ignore[import-untyped,import-not-found,unused-ignore]

    return install(router, AioSession(**kwargs))


def aio_client(router: Any, region_name: Optional[str] = None, **kwargs: Any) -> Any:
    """An aiobotocore bedrock-runtime client, to enter with `async with` (aiobotocore's
    `create_client` keyword arguments), whose Converse, ConverseStream, InvokeModel and
    InvokeModelWithResponseStream calls `router` answers on the event loop. Built with one
    attempt (aiobotocore cannot be told per answer not to retry): the other operations get
    none of botocore's retries either, unless `config` asks for them."""
    from botocore.config import Config  # type: ignore[import-untyped]

    one = Config(retries={"total_max_attempts": 1})
    kwargs["config"] = one.merge(kwargs["config"]) if "config" in kwargs else one
    return aio_session(router).create_client(SERVICE, region_name=region_name or "us-east-1", **kwargs)


def botocore_session(router: Any, **kwargs: Any) -> botocore.session.Session:
    """A botocore session whose bedrock-runtime clients are routed (LlamaIndex's
    `botocore_session=`)."""
    return install(router, botocore.session.get_session(**kwargs))


def session(router: Any, **kwargs: Any) -> Any:
    """A boto3 `Session` (its keyword arguments) whose bedrock-runtime clients are routed
    (Strands' `boto_session=`, anything that takes a session)."""
    import boto3  # type: ignore[import-untyped]

    return install(router, boto3.Session(**kwargs))


def client(router: Any, region_name: Optional[str] = None, **kwargs: Any) -> Any:
    """A bedrock-runtime client (boto3's `client` keyword arguments) whose Converse,
    ConverseStream, InvokeModel and InvokeModelWithResponseStream calls `router` answers. The region only names where the rest goes; Laneway
    picks regions itself."""
    s = session(router)
    return s.client(SERVICE, region_name=region_name or s.region_name or "us-east-1", **kwargs)
