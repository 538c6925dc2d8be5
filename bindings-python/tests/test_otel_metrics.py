"""Laneway's metrics on the app's OpenTelemetry meter: the instruments of the core's catalog, with
the names and attributes of `router.prometheus()` (and so of a Rust app's meter), gauges observed
at collection, and nothing a caller sent in an attribute."""

import json
import re
import subprocess
import sys
import textwrap

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

import laneway
from laneway import _laneway

SPECS = {s["name"]: s for s in _laneway._metric_instruments()}


def points(reader):
    """Every data point of the last collection: {(name, sorted attribute pairs): point}."""
    out = {}
    data = reader.get_metrics_data()
    for rm in data.resource_metrics if data else []:
        for sm in rm.scope_metrics:
            if sm.scope.name != "laneway":
                continue
            for m in sm.metrics:
                for p in m.data.data_points:
                    out[(m.name, tuple(sorted(p.attributes.items())))] = p
    return out


def prometheus_series(text):
    """The Prometheus text's series: {(name, sorted label pairs)}, quantile lines as their summary's."""
    out = set()
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$", line)
        assert m, line
        name, labels, value = m.group(1), m.group(2) or "", float(m.group(3))
        pairs = tuple(sorted((k, v) for k, v in re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', labels) if k != "quantile"))
        for suffix in ("_sum", "_count"):
            if name.endswith(suffix) and name[: -len(suffix)] in PROM_KINDS:
                name = name[: -len(suffix)]
        kind = PROM_KINDS.get(name)
        if kind == "counter" and value == 0:
            continue  # OpenTelemetry never sees an add of zero
        out.add((name, pairs))
    return out


PROM_KINDS = {s["prometheus_name"]: s["kind"] for s in SPECS.values()}


def as_prometheus(otel_points):
    """The OpenTelemetry points named and labelled as the Prometheus text names them."""
    out = set()
    for (name, attrs), p in otel_points.items():
        spec = SPECS[name]
        if spec["kind"] == "histogram" and p.count == 0:
            continue
        if spec["kind"] == "counter" and p.value == 0:
            continue  # as the Prometheus side: a counter still at zero is left out of both
        labels = tuple(sorted((k.replace(".", "_"), v) for k, v in attrs))
        out.add((spec["prometheus_name"], labels))
    return out


def traffic(emulator, router):
    for i in range(3):
        for _ in router.stream_sync(f"question {i}", family="nova", slo="interactive", max_tokens=16, task_id="t"):
            pass
    router.generate_sync("the secret prompt text", family="nova", slo="background", max_tokens=16, task_id="t")
    emulator.add_fault({"kind": "outage", "region": "us-east-1", "count": 1})
    try:
        router.generate_sync("hi", model="amazon.nova-lite-v1:0", max_tokens=8)
    finally:
        emulator.clear_faults()
    router.finish_task("t", True)


def test_the_apps_meter_gets_the_prometheus_texts_names_and_labels(emulator):
    reader = InMemoryMetricReader()
    router = laneway.Router(**emulator.router_kwargs())
    router.instrument(MeterProvider(metric_readers=[reader]))
    traffic(emulator, router)
    got = points(reader)
    names = {name for name, _ in got}
    assert names <= set(SPECS), names - set(SPECS)
    for name in [
        "gen_ai.client.operation.duration",
        "gen_ai.client.token.usage",
        "gen_ai.client.operation.time_to_first_chunk",
        "laneway.cost",
        "laneway.requests.in_flight",
        "laneway.attempt.errors",
        "laneway.breaker.state",
        "laneway.region.ejected",
        "laneway.tasks",
    ]:
        assert name in names, name
    otel = as_prometheus(got)
    prom = prometheus_series(router.prometheus())
    assert otel == prom, f"only in OpenTelemetry: {sorted(otel - prom)}\nonly in Prometheus: {sorted(prom - otel)}"

    snapshot = router.metrics()
    calls = sum(lane["requests"] for _, lane in snapshot["lanes"])
    durations = sum(p.count for (name, _), p in got.items() if name == "gen_ai.client.operation.duration")
    assert durations == calls >= 4
    ttft = [p for (name, _), p in got.items() if name == "gen_ai.client.operation.time_to_first_chunk"]
    assert 3 <= sum(p.count for p in ttft) <= durations
    assert list(ttft[0].explicit_bounds) == SPECS["gen_ai.client.operation.time_to_first_chunk"]["buckets"]
    cost = sum(p.value for (name, _), p in got.items() if name == "laneway.cost")
    assert abs(cost - sum(lane["cost_usd"] for _, lane in snapshot["lanes"])) < 1e-12
    failed = {dict(a)["error.type"]: p.value for (name, a), p in got.items() if name == "laneway.attempt.errors"}
    assert failed.get("unavailable", 0) >= 1, failed
    (in_flight,) = [p for (name, _), p in got.items() if name == "laneway.requests.in_flight"]
    assert in_flight.value == 0
    values = {v for _, attrs in got for _, v in attrs}
    assert not any("secret" in v or v == "t" for v in values), values
    assert router._instruments.dropped() == 0


def test_a_router_made_after_the_apps_provider_is_set_is_instrumented_already(emulator):
    # A fresh interpreter, so that no other test's router records into the global provider.
    script = textwrap.dedent(
        """
        import json, sys
        from opentelemetry import metrics
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        import laneway
        reader = InMemoryMetricReader()
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
        router = laneway.Router(**json.loads(sys.argv[1]))
        router.generate_sync("hi", family="nova", max_tokens=8)
        data = reader.get_metrics_data()
        print(sum(p.count for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
                  if m.name == "gen_ai.client.operation.duration" for p in m.data.data_points))
        """
    )
    out = subprocess.run([sys.executable, "-c", script, json.dumps(emulator.router_kwargs())], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1", out.stdout


def test_instrumenting_again_moves_the_metrics_to_the_new_provider(emulator):
    first, second = InMemoryMetricReader(), InMemoryMetricReader()
    router = laneway.Router(**emulator.router_kwargs())
    router.instrument(MeterProvider(metric_readers=[first]))
    router.generate_sync("hi", family="nova", max_tokens=8)
    router.instrument(MeterProvider(metric_readers=[second]))
    router.generate_sync("hi", family="nova", max_tokens=8)
    count = lambda reader: sum(p.count for (name, _), p in points(reader).items() if name == "gen_ai.client.operation.duration")
    assert (count(first), count(second)) == (1, 1)


def test_routers_sharing_a_provider_are_each_observed_and_instrumenting_again_keeps_the_gauges(emulator):
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    a = laneway.Router(**emulator.router_kwargs())
    b = laneway.Router(**emulator.router_kwargs(), config={"routing": {"outlier": {"enabled": False}}})
    a.instrument(provider)
    b.instrument(provider)
    a.generate_sync("hi", family="nova", max_tokens=8)
    b.generate_sync("hi", family="nova", max_tokens=8)
    got = points(reader)
    # Both routers' calls reach the shared histograms, and their gauges are one series each.
    assert sum(p.count for (name, _), p in got.items() if name == "gen_ai.client.operation.duration") == 2
    breakers = [k for k in got if k[0] == "laneway.breaker.state"]
    assert breakers and len(breakers) == len(set(breakers))
    a.instrument(provider)  # again, on the same provider: the gauges stay
    got = points(reader)
    assert any(name == "laneway.requests.in_flight" for name, _ in got)
    assert any(name == "laneway.region.ejected" for name, _ in got)
