"""Laneway's metrics on the application's OpenTelemetry meter.

`Router.instrument(meter_provider)` (or, by default, a router made after the application set
its global meter provider) makes one instrument per metric of the core's catalog on the meter
`laneway`: the same names, units, bucket boundaries and attributes as a Rust application's
meter and the Prometheus text, so one OTLP pipeline carries them all. The core keeps each
call's measurements in a bounded queue; a daemon thread per instrumented router drains it (the
GIL released while it waits) into the histograms and counters. Gauges (calls in flight, queue
depth, breakers, ejected regions, shared state) are observed from the routers when the meter
collects, once per meter for all the routers on it (summed, or the highest for a state), and
each collection first takes in whatever the queues hold, so an export is never behind the
calls that finished before it.
"""

from __future__ import annotations

import atexit
import threading
import time
import weakref
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import _laneway

# How long the drain thread waits for a measurement before looking whether its router is gone.
_WAIT = 0.5
_BATCH = 512
# How long one reading of a router's gauges serves a collection's callbacks.
_COLLECTION = 0.1
_threads: "weakref.WeakSet[threading.Thread]" = weakref.WeakSet()
_stop = threading.Event()

Measurement = Tuple[str, float, Dict[str, str]]


def global_provider_set() -> bool:
    """Whether the application has set a global meter provider (OpenTelemetry installed)."""
    try:
        from opentelemetry.metrics import _internal
    except ImportError:
        return False
    return getattr(_internal, "_METER_PROVIDER", None) is not None


class _Observers:
    """The observable instruments of one meter, made once: each collection observes every
    router instrumented on it (a meter hands back an instrument it already has, and drops the
    new one's callbacks, so a second router's would never run)."""

    def __init__(self, metrics: Any, meter: Any, specs: List[Dict[str, Any]]):
        self._members: "weakref.WeakSet[_Instruments]" = weakref.WeakSet()
        self._lock = threading.Lock()
        for spec in specs:
            kind = spec["kind"]
            if not kind.startswith("observable_"):
                continue
            make = {
                "observable_counter": meter.create_observable_counter,
                "observable_up_down_counter": meter.create_observable_up_down_counter,
                "observable_gauge": meter.create_observable_gauge,
            }[kind]
            # A state (a breaker, an ejection) is the highest any router sees; counts add up.
            combine = max if kind == "observable_gauge" else (lambda a, b: a + b)
            make(spec["name"], callbacks=[self._callback(metrics, spec["name"], combine)], unit=spec["unit"], description=spec["description"])

    def join(self, member: "_Instruments") -> None:
        with self._lock:
            self._members.add(member)

    def leave(self, member: "_Instruments") -> None:
        with self._lock:
            self._members.discard(member)

    def _callback(self, metrics: Any, name: str, combine: Callable[[float, float], float]) -> Callable[[Any], List[Any]]:
        def observe(_options: Any) -> List[Any]:
            with self._lock:
                members = list(self._members)
            totals: Dict[Tuple[Tuple[str, str], ...], float] = {}
            for member in members:
                for metric, value, attributes in member.observations():
                    if metric != name:
                        continue
                    key = tuple(sorted(attributes.items()))
                    totals[key] = combine(totals[key], value) if key in totals else value
            return [metrics.Observation(value, dict(key)) for key, value in totals.items()]

        return observe


# Each meter's observers, for as long as the meter lives.
_observers: "weakref.WeakKeyDictionary[Any, _Observers]" = weakref.WeakKeyDictionary()
_observers_lock = threading.Lock()


def _observers_of(metrics: Any, meter: Any, specs: List[Dict[str, Any]]) -> _Observers:
    with _observers_lock:
        try:
            found = _observers.get(meter)
        except TypeError:  # a meter that cannot be weakly referenced: its own observers
            return _Observers(metrics, meter, specs)
        if found is None:
            found = _Observers(metrics, meter, specs)
            _observers[meter] = found
        return found


class _Instruments:
    """One router's instruments on one meter, and the thread that feeds them."""

    def __init__(self, router: Any, meter_provider: Any = None):
        from opentelemetry import metrics

        from . import __version__

        meter = metrics.get_meter(
            "laneway",
            __version__,
            meter_provider=meter_provider,
            schema_url=_laneway._otel_schema_url(),
        )
        self._router = weakref.ref(router)
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._recorders: Dict[str, Callable[[float, Dict[str, str]], None]] = {}
        self._seen: Optional[Tuple[float, List[Measurement]]] = None
        specs = _laneway._metric_instruments()
        for spec in specs:
            self._make(meter, spec)
        # The core keeps measurements from the first drain on: from now, not from when the
        # thread first runs; and a target already attempted starts its attempts from zero here.
        self.drain_now()
        router._native._restart_host_series()
        self._observers = _observers_of(metrics, meter, specs)
        self._observers.join(self)
        self._thread = threading.Thread(target=self._drain_loop, name="laneway-metrics", daemon=True)
        _threads.add(self._thread)
        self._thread.start()

    def _make(self, meter: Any, spec: Dict[str, Any]) -> None:
        name, kind = spec["name"], spec["kind"]
        common = {"unit": spec["unit"], "description": spec["description"]}
        if kind == "histogram":
            h = meter.create_histogram(name, explicit_bucket_boundaries_advisory=list(spec["buckets"]), **common)
            self._recorders[name] = h.record
        elif kind == "counter":
            c = meter.create_counter(name, **common)
            self._recorders[name] = c.add

    def _native(self) -> Any:
        router = None if self._closed.is_set() else self._router()
        return None if router is None else router._native

    def close(self) -> None:
        """Stops feeding these instruments (another `instrument` call replaced them), after
        handing them what the core has queued."""
        self.drain_now()
        self._closed.set()
        self._observers.leave(self)

    def observations(self) -> List[Measurement]:
        """The router's gauges now (read once per collection), after taking in what its queue
        holds: the histograms and counters get what finished calls left first."""
        native = self._native()
        if native is None:
            return []
        now = time.monotonic()
        seen = self._seen
        if seen is not None and now - seen[0] < _COLLECTION:
            return seen[1]
        self.drain_now()
        values = native._observe()
        self._seen = (now, values)
        return values

    def _record(self, batch: List[Measurement]) -> None:
        for name, value, attributes in batch:
            recorder = self._recorders.get(name)
            if recorder is not None:
                recorder(value, attributes)

    def drain_now(self) -> None:
        """Records every measurement the core has queued, on the calling thread."""
        native = self._native()
        if native is None:
            return
        # Under the lock: once a collection holds it, everything queued before is recorded.
        with self._lock:
            while True:
                batch = native._drain_measurements(_BATCH)
                self._record(batch)
                if len(batch) < _BATCH:
                    return

    def _drain_loop(self) -> None:
        while not _stop.is_set() and not self._closed.is_set():
            native = self._native()
            if native is None:
                return
            ready = native._wait_measurements(_WAIT)
            del native
            if ready:
                self.drain_now()

    def dropped(self) -> int:
        native = self._native()
        return 0 if native is None else int(native._measurements_dropped())


def instrument(router: Any, meter_provider: Any = None) -> _Instruments:
    """Instruments on `meter_provider`'s meter (the global one when `None`) fed from `router`."""
    try:
        import opentelemetry.metrics  # noqa: F401
    except ImportError as e:  # pragma: no cover - the message is the point
        raise ImportError("Router.instrument needs the OpenTelemetry API: pip install opentelemetry-api (and opentelemetry-sdk for an exporter)") from e
    return _Instruments(router, meter_provider)


@atexit.register
def _stop_at_exit() -> None:
    # A daemon thread still waiting in the native drain when the interpreter finalizes would be
    # torn down inside Rust: stop them first (each wakes within its wait).
    _stop.set()
    for thread in list(_threads):
        thread.join(timeout=2 * _WAIT + 1.0)
