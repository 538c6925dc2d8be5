"""Laneway's logs in Python's `logging`.

The core keeps its events in a bounded buffer; one daemon thread drains it (the GIL released
while it waits) and hands each record to the logger of its module: `laneway.state.shared` for
the core's shared state, all under `laneway`. The level follows the `laneway` logger's
effective level, read again at least every half second, so that events below it cost the
runtime nothing; a repeated warning is said once a minute with the count of the others
(`extra` key `laneway.repeated`). Structured fields arrive as `extra` keys prefixed `laneway.`.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from typing import Optional

from . import _laneway

_ROOT = "laneway"
# The level the core is told to keep, re-read from `logging` this often (seconds).
_LEVEL_EVERY = 0.5
_lock = threading.Lock()
_thread: Optional[threading.Thread] = None
_pid: Optional[int] = None
_stop = threading.Event()
_emitting = threading.Lock()
# The level the core was last told (a `logging` number).
_level: Optional[int] = None


def dropped() -> int:
    """Records the core dropped because they were not drained in time."""
    return int(_laneway._log_dropped())


def _effective_levelno() -> int:
    logger = logging.getLogger(_ROOT)
    if logger.disabled or logging.root.manager.disable >= logging.CRITICAL:
        return logging.CRITICAL + 1
    return max(logger.getEffectiveLevel(), logging.root.manager.disable + 1)


def _emit(row: dict) -> None:
    name = row["logger"]
    logger = logging.getLogger(name if name.startswith(_ROOT) else f"{_ROOT}.{name}")
    levelno = row["levelno"]
    if not logger.isEnabledFor(levelno):
        return
    extra = {f"laneway.{k}": v for k, v in row["fields"].items()}
    message = row["message"]
    if row["repeated"]:
        extra["laneway.repeated"] = row["repeated"]
        message = f"{message} (and {row['repeated']} times more in the last minute)"
    if row["fields"]:
        message = message + " [" + ", ".join(f"{k}={v}" for k, v in row["fields"].items()) + "]"
    record = logger.makeRecord(logger.name, levelno, "laneway", 0, message, (), None, extra=extra)
    logger.handle(record)


def _refresh_level() -> None:
    global _level
    now = _effective_levelno()
    if now != _level:
        _laneway._set_log_level(now)
        _level = now


def _emit_buffered() -> None:
    # Under `_emitting`, so that once `flush` holds it every record the core kept before is out.
    with _emitting:
        while True:
            rows = _laneway._drain_logs(256, 0.0)
            for row in rows:
                try:
                    _emit(row)
                except Exception:
                    # A filter or handler that raises must not stop the thread: the record is
                    # lost, as `logging` loses a record whose handler fails.
                    continue
            if len(rows) < 256:
                return


def _drain() -> None:
    while not _stop.is_set():
        _refresh_level()
        if _laneway._wait_logs(_LEVEL_EVERY):
            _emit_buffered()


def flush() -> None:
    """Hands every record the core kept so far to `logging`, on the calling thread."""
    _refresh_level()
    _emit_buffered()


def start() -> None:
    """Starts the drain thread once per process (again in a child after `fork`), and takes the
    `laneway` logger's level now."""
    global _thread, _pid
    with _lock:
        _refresh_level()
        if _thread is not None and _pid == os.getpid() and _thread.is_alive():
            return
        _stop.clear()
        _thread = threading.Thread(target=_drain, name="laneway-logs", daemon=True)
        _pid = os.getpid()
        _thread.start()


@atexit.register
def _stop_at_exit() -> None:
    # A daemon thread still waiting in the native drain when the interpreter finalizes would be
    # torn down inside Rust: stop it first (it wakes within its half-second wait).
    _stop.set()
    thread = _thread
    if thread is not None and _pid == os.getpid():
        thread.join(timeout=2 * _LEVEL_EVERY + 1.0)
