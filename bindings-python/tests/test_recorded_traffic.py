"""Recorded traffic from Python: `router.advice()` over the calls `[record]` sampled, and the
trace's lines as the app's OpenTelemetry log records (`router.record_logs`)."""

import json

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor

try:
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter as Exporter
except ImportError:  # opentelemetry-sdk before 1.39
    from opentelemetry.sdk._logs.export import InMemoryLogExporter as Exporter

import laneway

WASTEFUL = {"record": {"sample": 1.0}, "slo_tiers": {"background": ["priority"]}}


def test_advice_names_background_work_sent_at_priority(emulator):
    router = laneway.Router(WASTEFUL, **emulator.router_kwargs())
    for i in range(8):
        router.generate_sync(f"summarise report {i}", model="amazon.nova-lite-v1:0", slo="background", max_tokens=32)
    assert router.flush_record()
    advice = router.advice()
    assert advice["calls"] == 8
    first = advice["changes"][0]
    assert first["change"] == {"kind": "tier", "class": "background", "from": "priority", "to": "flex"}
    assert first["patch"] == {"slo_tiers": {"background": ["flex"]}}
    assert first["monthly_saving_usd"] > 0 and first["risk"] == "low"
    assert advice["classes"]["background"]["calls"] == 8
    assert advice["not_assessed"]


def test_advice_without_record_is_a_config_error(emulator):
    router = laneway.Router(**emulator.router_kwargs())
    with pytest.raises(laneway.ConfigError, match="record"):
        router.advice()
    with pytest.raises(laneway.ConfigError, match="record"):
        router.record_logs(LoggerProvider())


def test_the_trace_goes_to_the_apps_logs_without_text(emulator):
    exporter = Exporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    router = laneway.Router({"record": {"sample": 1.0}}, **emulator.router_kwargs())
    router.record_logs(provider)
    for i in range(3):
        router.generate_sync(f"the secret prompt {i}", family="nova", max_tokens=16)

    def records():
        return [r.log_record for r in exporter.get_finished_logs()]

    assert router.flush_record()
    got = records()
    assert sum(r.attributes["laneway.record.line"] == "call" for r in got) == 3
    assert got[0].attributes["laneway.record.line"] == "header"
    for r in got:
        line = json.loads(r.body)
        assert line["line"] == r.attributes["laneway.record.line"]
        assert "secret" not in r.body
        if getattr(r, "event_name", None) is not None:
            assert r.event_name == "laneway.record." + line["line"]
    calls = [json.loads(r.body) for r in got if r.attributes["laneway.record.line"] == "call"]
    assert all(c["cost_usd"] > 0 and c["class"] == "standard" for c in calls)
