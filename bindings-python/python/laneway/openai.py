"""A drop-in for the `openai` SDK's client: `chat.completions.create(...)` and
`responses.create(...)` routed by Laneway, for every model it routes (GPT on Bedrock's
OpenAI-compatible endpoints, Claude and Nova through Converse, SageMaker endpoints, families).

Moving an app is one line:

    # from openai import OpenAI
    from laneway.openai import OpenAI

    client = OpenAI()
    completion = client.chat.completions.create(
        model="openai.gpt-5.6-terra",
        messages=[{"role": "user", "content": "Hello"}],
        extra_body={"laneway": {"slo": "interactive"}},
    )
    print(completion.choices[0].message.content, completion.laneway.decision.region)

Answers have the SDK's shapes (attribute access, `model_dump()`, `to_json()`), with Laneway's
decision, timings and cost under `.laneway`. Streams (`stream=True`) iterate the SDK's chunks or
typed events. Errors are Laneway's classes and, when the `openai` package is installed, the
SDK's too (`except openai.RateLimitError` works). Reading a body and writing the answer is the
Rust core's (`laneway::surface::openai`); this module only converts.
"""

from __future__ import annotations

import abc
import copy
import importlib
import json
import warnings
from typing import Any, AsyncIterator, Dict, Iterator, List, Mapping, Optional, Union

from . import _laneway
from ._router import Router, _dispatcher
from .errors import LanewayError

__all__ = ["OpenAI", "AsyncOpenAI", "OpenAIObject", "Stream", "AsyncStream", "client", "async_client"]


class OpenAIObject:
    """A value of the SDK's shape over the dict the core wrote: `obj.field` (None for a field
    left out, as the SDK's models give), `obj.model_dump()`, `obj.to_dict()`, `obj.to_json()`.
    Passing it back in a request (an assistant message, a response's output items) sends it as
    it came."""

    __slots__ = ("_d", "_cache")

    def __init__(self, d: Mapping[str, Any]):
        object.__setattr__(self, "_d", d)
        object.__setattr__(self, "_cache", {})

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        cache = self._cache
        if name in cache:
            return cache[name]
        value = _view(self._d.get(name))
        cache[name] = value
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        self._d[name] = _plain(value)
        self._cache.pop(name, None)

    def __contains__(self, name: str) -> bool:
        return name in self._d

    def __eq__(self, other: object) -> bool:
        if isinstance(other, OpenAIObject):
            return self._d == other._d
        # Python's equality protocol, not a placeholder: another type is asked in turn, and
        # objects of unrelated types compare unequal.
        return NotImplemented

    # Equal by value and mutable, so unhashable, as the SDK's pydantic models are: hashing by
    # identity would give two equal objects different hashes.
    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        kind = self._d.get("object") or self._d.get("type") or "object"
        return f"OpenAIObject({kind}: {json.dumps(self._d, default=str)[:200]})"

    def __getstate__(self) -> Dict[str, Any]:
        return {"d": self._d}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        object.__setattr__(self, "_d", state["d"])
        object.__setattr__(self, "_cache", {})

    def __copy__(self) -> "OpenAIObject":
        return type(self)(dict(self._d))

    def __deepcopy__(self, memo: Dict[int, Any]) -> "OpenAIObject":
        return type(self)(copy.deepcopy(self._d, memo))

    def model_dump(self, *, exclude_none: bool = False, exclude_unset: bool = False, **_: Any) -> Dict[str, Any]:
        """A deep copy of the fields, as the SDK's `model_dump` gives (`exclude_none` leaves
        out fields that are None)."""
        d = copy.deepcopy(self._d)
        return _drop_none(d) if exclude_none else d

    def to_dict(self, *, exclude_none: bool = True, **kw: Any) -> Dict[str, Any]:
        """The SDK's `to_dict`: fields that are None are left out by default."""
        return self.model_dump(exclude_none=exclude_none, **kw)

    def model_dump_json(self, *, indent: Optional[int] = None, exclude_none: bool = False, **_: Any) -> str:
        return json.dumps(self.model_dump(exclude_none=exclude_none), indent=indent)

    def to_json(self, *, indent: Optional[int] = 2, exclude_none: bool = True, **_: Any) -> str:
        return json.dumps(self.model_dump(exclude_none=exclude_none), indent=indent)


def _view(value: Any) -> Any:
    if isinstance(value, dict):
        return OpenAIObject(value)
    if isinstance(value, list):
        return [_view(v) for v in value]
    return value


def _drop_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value]
    return value


def _is_omitted(value: Any) -> bool:
    """The SDK's `NOT_GIVEN` / `omit` sentinels: the field is not sent."""
    return type(value).__name__ in ("NotGiven", "Omit")


def _plain(value: Any) -> Any:
    """A request value as plain data: views and the SDK's own models (answers passed back in
    a conversation) as their fields, the SDK's sentinels left out."""
    if isinstance(value, OpenAIObject):
        return value._d
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items() if not _is_omitted(v)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        # pydantic models: the SDK's types, or the caller's own.
        return _plain(dump(exclude_unset=True, mode="json"))
    return value


NOT_GIVEN_HERE: Any = type("NotGiven", (), {})()

# Per-request options of the SDK's `create` that are not body fields.
_REQUEST_OPTIONS = ("extra_headers", "extra_query", "extra_body", "timeout")


def _body(kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """`create`'s keyword arguments as the body the core reads: `extra_body` merged in (as the
    SDK merges it), `timeout` as the call's deadline, `extra_headers` / `extra_query` passed
    along by name so that the answer says they were not sent."""
    body = {k: _plain(v) for k, v in kwargs.items() if k not in _REQUEST_OPTIONS and not _is_omitted(v)}
    extra = kwargs.get("extra_body")
    if extra is not None and not _is_omitted(extra):
        for k, v in _plain(extra).items():
            if k == "laneway" and isinstance(body.get("laneway"), dict) and isinstance(v, dict):
                body["laneway"] = {**body["laneway"], **v}
            else:
                body[k] = v
    for option in ("extra_headers", "extra_query"):
        value = kwargs.get(option)
        if value and not _is_omitted(value):
            body[option] = dict(value)
    timeout = _seconds(kwargs.get("timeout"))
    if timeout is not None:
        # The core makes it the call's deadline, unless `laneway.deadline_ms` sets one.
        body["timeout_ms"] = timeout * 1000
    return body


def _seconds(timeout: Any) -> Optional[float]:
    """A number of seconds, or an `httpx.Timeout` (its read limit, else its connect limit)."""
    if timeout is None or _is_omitted(timeout):
        return None
    if isinstance(timeout, (int, float)):
        return float(timeout)
    for part in ("read", "connect", "pool", "write"):
        value = getattr(timeout, part, None)
        if isinstance(value, (int, float)):
            return float(value)
    return None


_combined: Dict[type, Any] = {}


def _sdk_error(e: LanewayError) -> BaseException:
    """`e` as an instance of both its Laneway class and the SDK's class for its kind, with the
    SDK's attributes (`status_code`, `response`, `request`, `body`, `code`, `type`, `param`);
    `e` itself when the `openai` package is not installed."""
    try:
        import openai as sdk
    except ImportError:
        return e
    httpx: Any = None
    # The HTTP package the SDK's errors are typed with: `httpx2` from openai 3, else `httpx`.
    for package in ("httpx2", "httpx"):
        try:
            httpx = importlib.import_module(package)
            break
        except ImportError:
            continue
    if httpx is None or isinstance(e, sdk.OpenAIError):
        return e
    kind = str(getattr(e, "kind", ""))
    attempts = getattr(e, "attempts", None) or []
    name, status = _laneway._openai_error(kind, [str(a.get("kind")) for a in attempts])
    sdk_class = getattr(sdk, name)
    cls: Any = _combined.get(type(e))
    if cls is None or not issubclass(cls, sdk_class):
        cls = type(type(e).__name__, (type(e), sdk_class), {"__module__": "laneway.openai"})
        _combined[type(e)] = cls
    message = str(e)
    body = {"message": message, "type": kind, "code": getattr(e, "code", None), "param": getattr(e, "field", None)}
    out: Any = cls.__new__(cls)
    Exception.__init__(out, message)
    out.__dict__.update(e.__dict__)
    request = httpx.Request("POST", "https://bedrock-runtime.amazonaws.com/laneway")
    out.message = message
    out.request = request
    out.body = body
    out.code = body["code"]
    out.param = body["param"]
    out.type = kind
    if status is not None:
        out.status_code = status
        out.response = httpx.Response(status, request=request, json={"error": body})
    out.request_id = getattr(e, "request_id", None)
    out.__cause__ = e.__cause__
    return out


def _raise_as_sdk(e: LanewayError) -> None:
    raise _sdk_error(e) from e


class Stream:
    """A streamed answer: iterate it for the API's chunks or events (`OpenAIObject`s); `with`
    closes it; `close()` ends the iteration and cancels the request. As the SDK's, it is made
    once the answer has begun: a call that fails before its first event (throttled
    everywhere, refused) raises from `create`."""

    def __init__(self, native: "_laneway.NativeOpenAiStream"):
        self._native = native
        self._closed = False
        self._first: Optional[Dict[str, Any]] = self._read()

    def _read(self) -> Optional[Dict[str, Any]]:
        try:
            event = next(self._native, None)
        except LanewayError as e:
            self.close()
            _raise_as_sdk(e)
        if event is None:
            self.close()
        return event

    def __iter__(self) -> "Stream":
        return self

    def __next__(self) -> OpenAIObject:
        event, self._first = self._first, None
        if event is None and not self._closed:
            event = self._read()
        if event is None:
            raise StopIteration
        return OpenAIObject(event)

    def close(self) -> None:
        self._first = None
        if not self._closed:
            self._closed = True
            self._native.close()

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AsyncStream:
    """A streamed answer for `async for`; `async with` closes it; `await close()` ends the
    iteration and cancels the request. Made once the answer has begun (see `Stream`)."""

    def __init__(self, native: "_laneway.NativeOpenAiStream"):
        self._native = native
        self._closed = False
        self._batch: List[Dict[str, Any]] = []
        self._at = 0

    async def _start(self) -> "AsyncStream":
        await self._fill()
        return self

    async def _fill(self) -> None:
        try:
            self._batch = await self._native.next_batch(_dispatcher())
        except LanewayError as e:
            await self.close()
            _raise_as_sdk(e)
        self._at = 0
        if not self._batch:
            await self.close()

    def __aiter__(self) -> "AsyncStream":
        return self

    async def __anext__(self) -> OpenAIObject:
        if self._at >= len(self._batch) and not self._closed:
            await self._fill()
        if self._at >= len(self._batch):
            raise StopAsyncIteration
        event = self._batch[self._at]
        self._at += 1
        return OpenAIObject(event)

    async def close(self) -> None:
        self._batch, self._at = [], 0
        if not self._closed:
            self._closed = True
            self._native.close()

    async def __aenter__(self) -> "AsyncStream":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


class _Completions:
    def __init__(self, client: "_Client"):
        self._client = client

    def create(self, **kwargs: Any) -> Any:
        """`chat.completions.create(...)`: a `chat.completion` (an `OpenAIObject`), or with
        `stream=True` a stream of `chat.completion.chunk`s; Laneway's options in
        `extra_body={"laneway": {...}}`."""
        return self._client._call("chat", kwargs)


class _Chat:
    def __init__(self, client: "_Client"):
        self.completions = _Completions(client)


class _Responses:
    def __init__(self, client: "_Client"):
        self._client = client

    def create(self, **kwargs: Any) -> Any:
        """`responses.create(...)`: a `response` (with `output_text`), or with `stream=True` a
        stream of the Responses API's typed events; Laneway's options in
        `extra_body={"laneway": {...}}`."""
        return self._client._call("responses", kwargs)


# The SDK client's options that mean nothing to Laneway: said once, not sent.
# The SDK's client options the facade takes and does not use (the core's list).
_CLIENT_OPTIONS = _laneway._openai_options([])[0]


class _Client(abc.ABC):
    def __init__(
        self,
        *,
        router: Optional[Router] = None,
        config: Any = None,
        endpoint_url: Optional[str] = None,
        access_key_id: Optional[str] = None,
        secret_access_key: Optional[str] = None,
        api_key: Optional[str] = None,
        timeout: Any = None,
        **client_options: Any,
    ):
        unknown = [k for k in client_options if k not in _CLIENT_OPTIONS]
        if unknown:
            raise TypeError(f"unexpected keyword argument {unknown[0]!r}")
        ignored = [k for k, v in client_options.items() if v is not None and not _is_omitted(v)]
        if ignored:
            warnings.warn(f"laneway.openai: {_laneway._openai_options(ignored)[2]}", stacklevel=3)
        bedrock_key = None
        if api_key:
            # A Bedrock API key (long-term `ABSK...`, short-term `bedrock-api-key-...`) is sent
            # as the bearer token; an OpenAI key means nothing to Bedrock.
            if _laneway._is_bedrock_api_key(api_key):
                bedrock_key = api_key
            else:
                warnings.warn("laneway.openai: api_key is not a Bedrock API key and is not sent (AWS credentials sign the calls)", stacklevel=3)
        if router is not None:
            if any(v is not None for v in (config, endpoint_url, access_key_id, secret_access_key, bedrock_key)):
                raise TypeError("give a router, or the options to build one, not both")
            self.router = router
        else:
            self.router = Router(config, endpoint_url=endpoint_url, access_key_id=access_key_id, secret_access_key=secret_access_key, bedrock_api_key=bedrock_key)
        self._native = self.router._native
        self.timeout = timeout
        self.chat = _Chat(self)
        self.responses = _Responses(self)

    @abc.abstractmethod
    def _call(self, api: str, kwargs: Dict[str, Any]) -> Any:
        """Sends a body of `api` ("chat" or "responses"): the answer, a stream, or (async) an
        awaitable of one."""

    def _body(self, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        if self.timeout is not None and _is_omitted(kwargs.get("timeout", NOT_GIVEN_HERE)):
            kwargs = {**kwargs, "timeout": self.timeout}
        return _body(kwargs)


class OpenAI(_Client):
    """The `openai.OpenAI` client's shape over a Laneway router. Build it with a `router=`, or
    with `Router`'s options (`config`, `endpoint_url`, `access_key_id`, `secret_access_key`);
    `api_key` may be a Bedrock API key. `timeout` (seconds or an `httpx.Timeout`) is each
    call's deadline. The SDK's other client options are warned of and not used."""

    def _call(self, api: str, kwargs: Dict[str, Any]) -> Any:
        body = self._body(kwargs)
        try:
            if body.get("stream"):
                return Stream(self._native.openai_stream(api, body))
            return OpenAIObject(self._native.openai_blocking(api, body))
        except LanewayError as e:
            _raise_as_sdk(e)


class AsyncOpenAI(_Client):
    """`openai.AsyncOpenAI`'s shape: `await client.chat.completions.create(...)`, and with
    `stream=True` an `AsyncStream` for `async for`."""

    async def _call(self, api: str, kwargs: Dict[str, Any]) -> Any:
        body = self._body(kwargs)
        try:
            if body.get("stream"):
                return await AsyncStream(self._native.openai_stream(api, body))._start()
            return OpenAIObject(await self._native.openai(api, body, _dispatcher()))
        except LanewayError as e:
            _raise_as_sdk(e)


def _sdk_client(router: Router, cls_name: str, kwargs: Dict[str, Any]) -> Any:
    import openai

    from . import httpx as _seam

    # The SDK 3.x sends through httpx2, 2.x through httpx.
    module = importlib.import_module("httpx2" if int(openai.__version__.split(".")[0]) >= 3 else "httpx")
    if "http_client" in kwargs:
        raise TypeError("laneway.openai.client makes its own http_client (a transport Laneway answers on)")
    kwargs.setdefault("base_url", "http://laneway.invalid/v1")
    kwargs.setdefault("api_key", "laneway")
    # Laneway retries within the call's budget and deadline; its answers also say not to.
    kwargs.setdefault("max_retries", 0)
    if cls_name == "OpenAI":
        kwargs["http_client"] = module.Client(transport=_seam.transport(router, module=module))
    else:
        kwargs["http_client"] = module.AsyncClient(transport=_seam.async_transport(router, module=module))
    return getattr(openai, cls_name)(**kwargs)


def client(router: Router, **kwargs: Any) -> Any:
    """A real `openai.OpenAI` (its keyword arguments) whose Chat Completions and Responses
    calls `router` answers in process (`laneway.httpx`), for frameworks that want the SDK's
    own client (`isinstance` checks, `with_raw_response`, `.parse`, stream helpers). The SDK's
    `max_retries` is 0 unless given."""
    return _sdk_client(router, "OpenAI", kwargs)


def async_client(router: Router, **kwargs: Any) -> Any:
    """`client`, as a real `openai.AsyncOpenAI`."""
    return _sdk_client(router, "AsyncOpenAI", kwargs)
