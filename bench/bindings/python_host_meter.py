"""What recording Laneway's metrics into the OpenTelemetry Python SDK costs on the host's drain thread
(BENCHMARKS.md, "Telemetry: metrics overhead"): 200 calls' measurements, recorded 15 times."""
import time, statistics
import laneway
from laneway import _metrics
from laneway.testing import Emulator
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

with Emulator(scenario="fast") as emu:
    r = laneway.Router(**emu.router_kwargs())
    reader = InMemoryMetricReader()
    r.instrument(MeterProvider(metric_readers=[reader]))
    inst = r._instruments
    inst._closed.set()   # stop its thread: the queue keeps what the calls measure
    time.sleep(1.0)
    r._native._drain_measurements(100000)
    for _ in range(200):
        r.generate_sync("hi", family="nova", max_tokens=8)
    batch = r._native._drain_measurements(100000)
    per_call = len(batch) / 200
    times = []
    for _ in range(15):
        t0 = time.process_time()
        inst._record(batch)
        times.append((time.process_time() - t0) / 200 * 1e6)
    print(f"{per_call:.1f} measurements per call; recording them into the SDK's instruments: median {statistics.median(times):.1f} us CPU per call (15 rounds of 200 calls)")
