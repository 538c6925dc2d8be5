"""Laneway under the `anthropic` SDK's Bedrock client, unmodified, at its own seam (an httpx2
transport): `AnthropicBedrock` posts the Messages API to InvokeModel and
InvokeModelWithResponseStream, and reads Laneway's answers as the service's own, whole,
streamed and with its stream helpers, a tool call and a throttle storm among them."""

import httpx2
import pytest

anthropic = pytest.importorskip("anthropic")

import laneway
import laneway.httpx
from laneway.testing import Emulator

HAIKU = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
WEATHER = {"name": "weather", "description": "Weather for a city", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


def _client(router, *, is_async=False):
    cls = anthropic.AsyncAnthropicBedrock if is_async else anthropic.AnthropicBedrock
    transport = laneway.httpx.AsyncTransport(router) if is_async else laneway.httpx.Transport(router)
    http = (httpx2.AsyncClient if is_async else httpx2.Client)(transport=transport)
    # A bearer key skips SigV4: nothing leaves the process. Laneway retried already.
    return cls(aws_region="us-east-1", api_key="laneway-in-process", max_retries=0, http_client=http)


def test_messages_whole_and_streamed(router):
    client = _client(router)
    ask = dict(model=HAIKU, max_tokens=400, system="You are terse.", messages=[{"role": "user", "content": "Tell me a long story about the sea."}])
    message = client.messages.create(**ask)
    assert message.role == "assistant" and message.content[0].type == "text" and message.content[0].text
    assert message.stop_reason in ("end_turn", "max_tokens") and message.usage.output_tokens > 0
    assert laneway.last_decision()["model"].startswith("anthropic.claude")

    with client.messages.stream(**ask) as stream:
        pieces = list(stream.text_stream)
        final = stream.get_final_message()
    assert len(pieces) >= 20 and "".join(pieces) == final.content[0].text
    assert final.usage.output_tokens > 0 and final.stop_reason in ("end_turn", "max_tokens")


def test_a_tool_call_whole_and_streamed(router):
    client = _client(router)
    ask = dict(model=HAIKU, max_tokens=200, messages=[{"role": "user", "content": "Weather in Paris?"}], tools=[WEATHER], tool_choice={"type": "tool", "name": "weather"})
    message = client.messages.create(**ask)
    (call,) = [b for b in message.content if b.type == "tool_use"]
    assert call.name == "weather" and "city" in call.input and message.stop_reason == "tool_use"
    with client.messages.stream(**ask) as stream:
        final = stream.get_final_message()
    (call,) = [b for b in final.content if b.type == "tool_use"]
    assert call.name == "weather" and "city" in call.input


async def test_the_async_client_streams(router):
    client = _client(router, is_async=True)
    events = []
    async for event in await client.messages.create(model=HAIKU, max_tokens=100, messages=[{"role": "user", "content": "Say hello."}], stream=True):
        events.append(event.type)
    assert events[0] == "message_start" and events[-1] == "message_stop"


def test_a_throttle_storm_is_the_sdks_rate_limit_error():
    """Every Claude target throttling: Laneway waits within the call's deadline (a short one
    here, through `laneway.options`), then the SDK raises its own error, without retrying."""
    with Emulator(scenario="fast") as emu:
        emu.add_fault({"kind": "throttle", "model": "anthropic.claude-haiku-4-5-20251001-v1:0"})
        router = laneway.Router(**emu.router_kwargs())
        client = _client(router)
        with laneway.options(slo={"deadline": 2000}):
            with pytest.raises(anthropic.RateLimitError) as e:
                client.messages.create(model=HAIKU, max_tokens=10, messages=[{"role": "user", "content": "Hi"}])
            assert e.value.status_code == 429


def test_what_laneway_cannot_read_is_a_bad_request_naming_it(router):
    client = _client(router)
    with pytest.raises(anthropic.BadRequestError) as e:
        client.messages.create(model=HAIKU, max_tokens=10, messages=[{"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}]}])
    assert "messages[0].content[0].source.type" in str(e.value)
