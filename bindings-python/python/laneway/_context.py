"""Laneway's per-call options for calls made through code that knows nothing of them (an
agent framework over boto3 or the `openai` SDK): `with laneway.options(slo="interactive"):`
around the call. A context variable, so each thread and asyncio task has its own."""

import contextlib
import contextvars
import json
from typing import Any, Dict, Iterator, Optional

_options: contextvars.ContextVar[Optional[Dict[str, Any]]] = contextvars.ContextVar("laneway_options", default=None)
_last: contextvars.ContextVar[Optional[Dict[str, Any]]] = contextvars.ContextVar("laneway_last_decision", default=None)

# The decision headers of a whole answer (`laneway::surface::http::decision_headers`).
_DECISION = {
    "x-laneway-call-id": ("call_id", str),
    "x-laneway-model": ("model", str),
    "x-laneway-target": ("target", str),
    "x-laneway-region": ("region", str),
    "x-laneway-tier": ("tier", str),
    "x-laneway-attempts": ("attempts_sent", int),
    "x-laneway-cost-usd": ("cost_usd", float),
}


@contextlib.contextmanager
def options(**kwargs: Any) -> Iterator[Dict[str, Any]]:
    """Laneway's request options (`slo`, `task_id`, `residency`, `cache`, `min_variant`, ...,
    as a request's `laneway` object takes them) for the calls made inside, merged over those of
    an enclosing `options`. Options a call sets itself (its body's `laneway`) win."""
    merged = dict(_options.get() or {})
    merged.update(kwargs)
    token = _options.set(merged)
    try:
        yield merged
    finally:
        _options.reset(token)


def current() -> Optional[Dict[str, Any]]:
    """The options in effect here, if any."""
    return _options.get()


def header_value() -> Optional[str]:
    """The options in effect as the `x-laneway` header's JSON, if any."""
    o = _options.get()
    return None if not o else json.dumps(o, separators=(",", ":"))


def remember(headers: Any) -> None:
    """Keeps the decision an answer's headers carry, for `last_decision`."""
    decision = {}
    for name, value in headers:
        key = _DECISION.get(name.lower() if isinstance(name, str) else name)
        if key is not None:
            decision[key[0]] = key[1](value)
    if decision:
        _last.set(decision)


def last_decision() -> Optional[Dict[str, Any]]:
    """What Laneway decided for the last answer a seam (`laneway.boto3`, `laneway.httpx`,
    `laneway.openai.client`) gave in this context (thread or asyncio task): `call_id`,
    `model`, `target`, `region`, `tier`, `attempts_sent`, `cost_usd`. A stream's once it has
    been read to its end."""
    return _last.get()
