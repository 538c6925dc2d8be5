"""`[record]`'s lines as the app's OpenTelemetry log records: a daemon thread drains the core's
queue of lines (each a call, an outcome, a target's load counters, or a file's header) and
emits one log record per line on the logger `laneway` of the app's logger provider, its event
name `laneway.record.<kind>` and its body the line's JSON, as the Rust side's
`RouterBuilder::record_logs` does."""

import atexit
import threading
import time
import weakref
from typing import Any, Dict, List, Tuple

_BATCH = 512
# How long one native wait lasts (ms): the thread notices a closed router or exit within it.
_WAIT_MS = 200

_stop = threading.Event()
_threads: "weakref.WeakSet[threading.Thread]" = weakref.WeakSet()


class _RecordLogs:
    """One router's lines going to one logger provider."""

    def __init__(self, router: Any, logger_provider: Any = None):
        from opentelemetry import _logs

        from . import __version__

        provider = logger_provider if logger_provider is not None else _logs.get_logger_provider()
        self._logger = provider.get_logger("laneway", __version__)
        self._make_record = _logs.LogRecord
        self._severity = _logs.SeverityNumber.INFO
        # `event_name` came with opentelemetry-api 1.35; older ones have the kind as an
        # attribute only.
        try:
            _logs.LogRecord(event_name="laneway.record.header")
            self._named = True
        except TypeError:
            self._named = False
        self._router = weakref.ref(router)
        self._closed = threading.Event()
        self._lock = threading.Lock()
        # The queue starts with this router's header; a first drain here makes it the first
        # record, before any call's.
        self.drain_now()
        self._thread = threading.Thread(target=self._loop, name="laneway-record-logs", daemon=True)
        _threads.add(self._thread)
        self._thread.start()

    def _native(self) -> Any:
        router = None if self._closed.is_set() else self._router()
        return None if router is None else router._native

    def _emit(self, lines: List[Tuple[str, str]]) -> None:
        severity = self._severity
        for kind, body in lines:
            fields: Dict[str, Any] = {
                "timestamp": time.time_ns(),
                "severity_text": "INFO",
                "severity_number": severity,
                "body": body,
                "attributes": {"laneway.record.line": kind},
            }
            if self._named:
                fields["event_name"] = "laneway.record." + kind
            self._logger.emit(self._make_record(**fields))

    def drain_now(self) -> None:
        """Emits every line the core has queued, on the calling thread."""
        native = self._native()
        if native is None:
            return
        with self._lock:
            while True:
                lines = native._drain_record_lines(_BATCH, 0)
                self._emit(lines)
                if len(lines) < _BATCH:
                    return

    def close(self) -> None:
        self.drain_now()
        self._closed.set()

    def _loop(self) -> None:
        while not _stop.is_set() and not self._closed.is_set():
            native = self._native()
            if native is None:
                return
            # Wait without taking: lines are taken and emitted under the lock only, so that a
            # flush's drain_now has emitted everything queued before it when it returns.
            ready = native._wait_record_lines(_WAIT_MS)
            del native
            if ready:
                self.drain_now()


def record_logs(router: Any, logger_provider: Any = None) -> _RecordLogs:
    try:
        import opentelemetry._logs  # noqa: F401
    except ImportError as e:  # pragma: no cover - the message is the point
        raise ImportError("Router.record_logs needs the OpenTelemetry API: pip install opentelemetry-api (and opentelemetry-sdk for an exporter)") from e
    return _RecordLogs(router, logger_provider)


@atexit.register
def _stop_at_exit() -> None:
    _stop.set()
    for thread in list(_threads):
        thread.join(timeout=2 * _WAIT_MS / 1000 + 1.0)
