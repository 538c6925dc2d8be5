"""Each call is a span in the app's OpenTelemetry trace: a CLIENT span `chat {model}` under the
caller's span, with the GenAI conventions' attributes and Laneway's decision, an event per
failover, the error kind on failure, and no prompt text."""

import asyncio

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import laneway

EXPORTER = InMemorySpanExporter()
_provider = TracerProvider()
_provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
trace.set_tracer_provider(_provider)
APP = trace.get_tracer("app")


@pytest.fixture(autouse=True)
def fresh_spans():
    EXPORTER.clear()
    yield


def laneway_spans():
    return [s for s in EXPORTER.get_finished_spans() if s.instrumentation_scope.name == "laneway"]


def test_a_call_is_a_client_span_under_the_callers(router):
    with APP.start_as_current_span("agent turn") as parent:
        router.generate_sync("the secret prompt text", family="nova", slo="background", max_tokens=16)
    (span,) = laneway_spans()
    assert span.name == "chat nova"
    assert span.kind == SpanKind.CLIENT
    assert span.parent.span_id == parent.get_span_context().span_id
    a = span.attributes
    assert a["gen_ai.operation.name"] == "chat"
    assert a["gen_ai.provider.name"] == "aws.bedrock"
    assert a["gen_ai.request.model"] == "nova"
    assert a["gen_ai.response.model"].startswith("amazon.nova")
    assert a["gen_ai.usage.input_tokens"] > 0 and a["gen_ai.usage.output_tokens"] > 0
    assert a["laneway.slo"] == "background" and a["laneway.tier"] == "flex"
    assert a["laneway.region"] and a["laneway.cost_usd"] > 0
    assert "tier_from_slo" in a["laneway.reasons"]
    assert span.instrumentation_scope.schema_url == "https://opentelemetry.io/schemas/1.41.1"
    assert "secret prompt" not in str(dict(a))


def test_async_calls_and_streams_take_the_callers_context(router):
    async def turn():
        with APP.start_as_current_span("async turn") as parent:
            await router.generate("hi", family="nova", max_tokens=8)
            async for _ in router.stream("hi", family="nova", max_tokens=8):
                pass
        return parent

    parent = asyncio.run(turn())
    spans = laneway_spans()
    assert len(spans) == 2
    assert all(s.parent.span_id == parent.get_span_context().span_id for s in spans)
    assert spans[1].attributes["gen_ai.request.stream"] is True


def test_a_failover_is_an_event_and_a_failure_an_error(emulator, router):
    emulator.add_fault({"kind": "outage", "region": "us-east-1", "count": 1})
    try:
        router.generate_sync("hi", model="amazon.nova-lite-v1:0", max_tokens=8)
    finally:
        emulator.clear_faults()
    (span,) = laneway_spans()
    failovers = [e for e in span.events if e.name == "laneway.failover"]
    assert failovers and failovers[0].attributes["error.type"] == "unavailable", span.events
    EXPORTER.clear()
    with pytest.raises(laneway.LanewayError):
        router.generate_sync("hi", model="no.such-model", max_tokens=8)
    (span,) = laneway_spans()
    assert span.status.status_code == StatusCode.ERROR
    assert span.attributes["error.type"] == "invalid_request"


# Calls that reach Laneway through the official clients' seams are spans too.
LITE = "amazon.nova-lite-v1:0"


def test_a_call_through_botocore_is_a_span_under_the_callers(router):
    import laneway.boto3

    client = laneway.boto3.client(router)
    with APP.start_as_current_span("agent turn") as parent:
        client.converse(modelId=LITE, messages=[{"role": "user", "content": [{"text": "the secret prompt text"}]}], inferenceConfig={"maxTokens": 32})
    (span,) = laneway_spans()
    assert span.name == f"chat {LITE}" and span.kind == SpanKind.CLIENT
    assert span.parent.span_id == parent.get_span_context().span_id
    a = span.attributes
    assert a["gen_ai.response.model"] == LITE and a["gen_ai.usage.output_tokens"] > 0
    assert a["laneway.region"] and a["laneway.cost_usd"] > 0
    assert "secret prompt" not in str(dict(a))


def test_a_stream_through_the_openai_client_is_a_span_ended_with_the_stream(router):
    import laneway.openai

    client = laneway.openai.client(router)
    with APP.start_as_current_span("agent turn"):
        stream = client.chat.completions.create(model=LITE, messages=[{"role": "user", "content": "Tell me a story."}], stream=True)
        assert laneway_spans() == [], "open while the stream is read"
        text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    (span,) = laneway_spans()
    assert len(text) > 20
    assert span.attributes["gen_ai.request.stream"] is True
    assert span.attributes["gen_ai.usage.output_tokens"] > 0
    assert span.status.status_code != StatusCode.ERROR


def test_a_failed_call_through_a_seam_is_an_error_span(router):
    import laneway.openai
    import openai

    client = laneway.openai.client(router)
    with pytest.raises(openai.APIStatusError):
        client.chat.completions.create(model=LITE, messages=[{"role": "user", "content": "hi"}], max_completion_tokens=-1)
    (span,) = laneway_spans()
    assert span.status.status_code == StatusCode.ERROR
    assert span.attributes["error.type"]


def test_inside_an_instrumentations_genai_span_laneway_adds_to_it(router):
    import laneway.boto3

    # What the botocore instrumentation opens around `converse`: Laneway writes no second span.
    client = laneway.boto3.client(router)
    with APP.start_as_current_span("chat " + LITE, kind=SpanKind.CLIENT, attributes={"gen_ai.operation.name": "chat", "gen_ai.system": "aws.bedrock"}):
        client.converse(modelId=LITE, messages=[{"role": "user", "content": [{"text": "hi"}]}], inferenceConfig={"maxTokens": 16})
    assert laneway_spans() == []
    (span,) = [s for s in EXPORTER.get_finished_spans() if s.name == "chat " + LITE]
    assert span.attributes["laneway.region"] and span.attributes["laneway.cost_usd"] > 0
    assert "gen_ai.usage.output_tokens" not in span.attributes, "the instrumentation's usage is its own"
