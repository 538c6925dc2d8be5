"""Laneway's per-call options for calls made through code that knows nothing of them (an
agent framework over boto3 or the `openai` SDK): `with laneway.options(slo="interactive"):`
around the call. A context variable, so each thread and asyncio task has its own."""

import contextlib
import contextvars
import itertools
import json
from typing import Any, Dict, Iterator, Optional

_options: contextvars.ContextVar[Optional[Dict[str, Any]]] = contextvars.ContextVar("laneway_options", default=None)
_last: contextvars.ContextVar[Optional["_Seen"]] = contextvars.ContextVar("laneway_last_decision", default=None)
# The innermost `options` scope's record of decisions: one object shared by every copy of the
# context, so a call a framework makes on a thread or task of its own (which copies the
# context) is seen where the scope was opened.
_scope: contextvars.ContextVar[Optional[Dict[str, Any]]] = contextvars.ContextVar("laneway_scope", default=None)
_seq = itertools.count(1)


class _Seen:
    """A decision, numbered in the order decisions were kept."""

    __slots__ = ("seq", "decision")

    def __init__(self, decision: Dict[str, Any]):
        self.seq = next(_seq)
        self.decision = decision

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
    scope = _scope.set({})
    try:
        yield merged
    finally:
        _scope.reset(scope)
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
        seen = _Seen(decision)
        _last.set(seen)
        scope = _scope.get()
        if scope is not None:
            scope["seen"] = seen


def last_decision() -> Optional[Dict[str, Any]]:
    """What Laneway decided for the last answer a seam (`laneway.boto3`, `laneway.httpx`,
    `laneway.openai.client`) gave in this context (thread or asyncio task): `call_id`,
    `model`, `target`, `region`, `tier`, `attempts_sent`, `cost_usd`. A stream's once it has
    been read to its end. Inside `laneway.options(...)`, also a call made on a thread or task
    the framework started there (which copies the context)."""
    candidates = [_last.get(), (_scope.get() or {}).get("seen")]
    latest = max((c for c in candidates if c is not None), key=lambda c: c.seq, default=None)
    return None if latest is None else latest.decision
