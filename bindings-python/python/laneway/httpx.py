"""Laneway under the `openai` SDK (and anything else built on httpx), unmodified: an httpx
transport that answers Chat Completions and Responses requests in process, routed by Laneway,
whole or as server-sent events, so that the SDK's own parsing, types, `with_raw_response`,
stream helpers and error classes run as they do against a server.

    import httpx2, openai, laneway, laneway.httpx

    router = laneway.Router()
    client = openai.OpenAI(
        base_url="http://laneway/v1", api_key="unused", max_retries=0,
        http_client=httpx2.Client(transport=laneway.httpx.transport(router)),
    )

(`laneway.openai.client(router)` builds exactly that.) The `openai` SDK 3.x sends through
`httpx2`, 2.x and many frameworks through `httpx`: each transport is made for the module it is
given (by default `httpx2` when installed, else `httpx`). A request Laneway does not answer goes
to `fallback` (by default the module's own HTTP transport), as it would have gone.

Answers say `x-should-retry: false` on errors: Laneway retried already, within the call's
budget and deadline. A call's time is Laneway's deadline (the SLO's, or `laneway.options(slo=
{"deadline": ms})`): the HTTP client's own timeouts do not reach into an answer given in
process. Laneway's options reach a call through the body's `laneway` object
(`extra_body={"laneway": {...}}`), or `laneway.options(...)` around the call.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from types import ModuleType
from typing import Any, AsyncIterator, Iterator, List, Optional, Tuple

from . import _otel
from ._bodies import achunks, chunks
from ._context import header_value, remember
from ._router import _dispatcher

__all__ = ["Transport", "AsyncTransport", "transport", "async_transport", "default_module"]

# The core's header on an answer to a call that timed out (`laneway::surface::http::TIMED_OUT`).
_TIMED_OUT = "x-laneway-timed-out"


def default_module() -> ModuleType:
    """`httpx2` when installed (the `openai` SDK 3.x's), else `httpx`."""
    for name in ("httpx2", "httpx"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise ImportError("laneway.httpx needs httpx2 or httpx installed")


def _module_of(request: Any, fallback: ModuleType) -> ModuleType:
    """The module (httpx or httpx2) whose client sent `request`: its answer must be that
    module's `Response`."""
    name = type(request).__module__.split(".")[0]
    return sys.modules.get(name, fallback)


def _headers(request: Any) -> List[Tuple[str, str]]:
    headers = [(k, v) for k, v in request.headers.items()]
    options = header_value()
    if options is not None:
        headers.append(("x-laneway", options))
    return headers


def _body_init(self: Any, body: Any) -> None:
    self._body = body


def _body_iter(self: Any) -> Iterator[bytes]:
    yield from chunks(self._body)


def _body_close(self: Any) -> None:
    self._body.close()


async def _body_aiter(self: Any) -> AsyncIterator[bytes]:
    async for chunk in achunks(self._body):
        yield chunk


async def _body_aclose(self: Any) -> None:
    # The close waits for a read in progress to let go: off the event loop.
    await asyncio.to_thread(self._body.close)


def _streams(module: ModuleType) -> Tuple[type, type]:
    """`module`'s byte streams over a streamed answer: closing one (the SDK closing its
    response, a `break` out of a stream) cancels the call."""
    cached = getattr(module, "_laneway_streams", None)
    if cached is None:
        cached = (
            type("LanewayBody", (module.SyncByteStream,), {"__init__": _body_init, "__iter__": _body_iter, "close": _body_close}),
            type("LanewayAsyncBody", (module.AsyncByteStream,), {"__init__": _body_init, "__aiter__": _body_aiter, "aclose": _body_aclose}),
        )
        module._laneway_streams = cached  # type: ignore[attr-defined]
    return cached


def _response(module: ModuleType, answer: Tuple[int, List[Tuple[str, str]], Any], request: Any, asynchronous: bool) -> Any:
    status, headers, payload = answer
    remember(headers)
    if any(name == _TIMED_OUT for name, _ in headers):
        # The SDKs raise their timeout error for the transport's, not for a status.
        raise module.ReadTimeout(payload.decode(errors="replace") if isinstance(payload, bytes) else "timed out", request=request)
    if isinstance(payload, bytes):
        return module.Response(status, headers=headers, content=payload, request=request)
    stream = _streams(module)[1 if asynchronous else 0](payload)
    return module.Response(status, headers=headers, stream=stream, request=request)


class Transport:
    """An httpx (or httpx2) transport: Chat Completions and Responses answered in process by
    a router, the rest sent to `fallback` (the module's own HTTP transport unless given)."""

    def __init__(self, router: Any, fallback: Optional[Any] = None, module: Optional[ModuleType] = None):
        self._native = router._native
        self._module = module or default_module()
        self._fallback = fallback

    def handle_request(self, request: Any) -> Any:
        method, path = request.method, request.url.path
        if not self._native.http_answers(method, path):
            if self._fallback is None:
                self._fallback = _module_of(request, self._module).HTTPTransport()
            return self._fallback.handle_request(request)
        headers, body = _headers(request), request.read()
        span = _otel.start_http(method, path, headers, body)
        answer = _otel.answer_http(span, lambda: self._native.http_blocking(method, path, headers, body, traced=span is not None))
        return _response(_module_of(request, self._module), answer, request, asynchronous=False)

    def close(self) -> None:
        if self._fallback is not None:
            self._fallback.close()

    def __enter__(self) -> "Transport":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AsyncTransport:
    """`Transport` for async clients: the answer awaited on the running asyncio loop."""

    def __init__(self, router: Any, fallback: Optional[Any] = None, module: Optional[ModuleType] = None):
        self._native = router._native
        self._module = module or default_module()
        self._fallback = fallback

    async def handle_async_request(self, request: Any) -> Any:
        method, path = request.method, request.url.path
        if not self._native.http_answers(method, path):
            if self._fallback is None:
                self._fallback = _module_of(request, self._module).AsyncHTTPTransport()
            return await self._fallback.handle_async_request(request)
        body = await request.aread()
        headers = _headers(request)
        span = _otel.start_http(method, path, headers, body)
        answer = await _otel.aanswer_http(span, self._native.http(method, path, headers, body, _dispatcher(), traced=span is not None))
        return _response(_module_of(request, self._module), answer, request, asynchronous=True)

    async def aclose(self) -> None:
        if self._fallback is not None:
            await self._fallback.aclose()

    async def __aenter__(self) -> "AsyncTransport":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


def transport(router: Any, fallback: Optional[Any] = None, module: Optional[ModuleType] = None) -> Transport:
    """A transport for `module.Client(transport=...)` (httpx2 or httpx) that `router` answers
    Chat Completions and Responses on; other requests go to `fallback`."""
    return Transport(router, fallback, module)


def async_transport(router: Any, fallback: Optional[Any] = None, module: Optional[ModuleType] = None) -> AsyncTransport:
    """`transport` for `module.AsyncClient`."""
    return AsyncTransport(router, fallback, module)
