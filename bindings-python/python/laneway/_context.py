"""Laneway's per-call options for calls made through code that knows nothing of them (an
agent framework over boto3 or the `openai` SDK): `with laneway.options(slo="interactive"):`
around the call. A context variable, so each thread and asyncio task has its own."""

import contextlib
import contextvars
import json
from typing import Any, Dict, Iterator, Optional

_options: contextvars.ContextVar[Optional[Dict[str, Any]]] = contextvars.ContextVar("laneway_options", default=None)


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
