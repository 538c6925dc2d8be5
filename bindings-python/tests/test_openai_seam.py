"""Laneway under a real `openai` client, at the SDK's own seam (an httpx transport): the SDK's
types, `with_raw_response`, `.parse`, its stream helpers and error classes over Laneway's
answers, sync and async; no SDK retries on top of Laneway's; the rest sent where it was
going."""

import json

import openai
import pydantic
import pytest

import laneway
import laneway.httpx
import laneway.openai
from laneway.testing import Emulator

LITE = "amazon.nova-lite-v1:0"
SONNET = "anthropic.claude-sonnet-4-5-20250929-v1:0"
ASK = [{"role": "user", "content": "Tell me a story."}]


def test_a_real_client_parses_whole_answers_and_raw_responses(router):
    client = laneway.openai.client(router)
    assert isinstance(client, openai.OpenAI)
    r = client.chat.completions.create(model=LITE, messages=ASK, max_completion_tokens=200)
    assert isinstance(r, openai.types.chat.ChatCompletion)
    assert r.choices[0].message.content and r.choices[0].finish_reason in ("stop", "length")
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens > 0
    raw = client.chat.completions.with_raw_response.create(model=LITE, messages=ASK, max_completion_tokens=20)
    assert raw.http_response.status_code == 200 and raw.parse().choices[0].message.content
    assert raw.headers["x-laneway-model"] == LITE and float(raw.headers["x-laneway-cost-usd"]) > 0
    assert laneway.last_decision()["call_id"] == raw.headers["x-laneway-call-id"]
    answer = client.responses.create(model=LITE, input="Say hello.", max_output_tokens=50)
    assert answer.output_text and answer.status in ("completed", "incomplete")


def test_streams_and_the_sdks_stream_helpers(router):
    client = laneway.openai.client(router)
    text, usage = [], None
    for chunk in client.chat.completions.create(model=LITE, messages=ASK, stream=True, stream_options={"include_usage": True}):
        if chunk.choices:
            text.append(chunk.choices[0].delta.content or "")
        usage = chunk.usage or usage
    assert len("".join(text)) > 50 and usage.completion_tokens > 0
    # A stream's decision, once read to its end.
    assert laneway.last_decision()["model"] == LITE and laneway.last_decision()["cost_usd"] > 0
    with client.responses.stream(model=LITE, input="Tell me a story.") as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert "".join(deltas) == final.output_text and len(deltas) > 10


def test_tool_calls_and_structured_output_through_parse(router):
    client = laneway.openai.client(router)
    tools = [{"type": "function", "function": {"name": "weather", "description": "Weather for a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
    r = client.chat.completions.create(model=LITE, messages=[{"role": "user", "content": "Weather in Paris?"}], tools=tools, tool_choice={"type": "function", "function": {"name": "weather"}})
    call = r.choices[0].message.tool_calls[0]
    assert call.function.name == "weather" and "city" in json.loads(call.function.arguments)

    class Rating(pydantic.BaseModel):
        answer: str
        score: int

    parsed = client.chat.completions.parse(model=SONNET, messages=[{"role": "user", "content": "Rate it."}], response_format=Rating)
    assert isinstance(parsed.choices[0].message.parsed, Rating)


async def test_the_async_client_and_its_streams(router):
    client = laneway.openai.async_client(router)
    assert isinstance(client, openai.AsyncOpenAI)
    r = await client.chat.completions.create(model=LITE, messages=ASK, max_completion_tokens=50)
    assert r.choices[0].message.content
    stream = await client.responses.create(model=LITE, input="Tell me a story.", stream=True)
    kinds = [e.type async for e in stream]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"


def counting_client(router, sent):
    """A real `openai.OpenAI` asked for 3 retries, on the seam, with every request it sends
    noted in `sent`."""
    module = laneway.httpx.default_module()
    seam = laneway.httpx.transport(router)

    class Counting(module.BaseTransport):
        def handle_request(self, request):
            sent.append(request.url.path)
            return seam.handle_request(request)

    return openai.OpenAI(base_url="http://laneway.invalid/v1", api_key="x", max_retries=3, http_client=module.Client(transport=Counting()))


def test_errors_are_the_sdks_classes_and_the_sdk_does_not_retry_them(router):
    sent = []
    # Retries asked of the SDK: Laneway's answers tell it not to.
    client = counting_client(router, sent)
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=LITE, messages=[])
    assert e.value.status_code == 400 and "messages" in str(e.value)
    assert e.value.param == "messages", "the field, as the API's param"
    assert e.value.response.headers["x-should-retry"] == "false"
    with Emulator(scenario="fast") as emu:
        emu.add_fault({"kind": "throttle", "model": LITE})
        storm_sent = []
        throttled = counting_client(laneway.Router(**emu.router_kwargs()), storm_sent)
        with laneway.options(slo={"deadline": 1500}):
            with pytest.raises(openai.RateLimitError) as e:
                throttled.chat.completions.create(model=LITE, messages=ASK)
        assert e.value.status_code == 429
        assert len(storm_sent) == 1, "the SDK did not retry what Laneway answered"
    assert len(sent) == 1, sent
    # A call out of time is the SDK's timeout error, which the SDK retries as it retries its
    # own timeouts, when asked to (hence `max_retries=0`, the default of laneway.openai.client).
    with laneway.options(slo={"deadline": 1}):
        with pytest.raises(openai.APITimeoutError):
            client.chat.completions.create(model=LITE, messages=ASK)
    assert len(sent) == 1 + 4, sent


def test_what_laneway_does_not_answer_goes_to_the_fallback(router):
    module = laneway.httpx.default_module()
    seen = []

    def elsewhere(request):
        seen.append(request.url.path)
        return module.Response(200, json={"object": "list", "data": []})

    client = openai.OpenAI(
        base_url="http://laneway.invalid/v1", api_key="x", max_retries=0,
        http_client=module.Client(transport=laneway.httpx.transport(router, fallback=module.MockTransport(elsewhere))),
    )
    assert list(client.models.list()) == []
    assert seen == ["/v1/models"]
    assert client.chat.completions.create(model=LITE, messages=ASK, max_completion_tokens=8).choices[0].message.content
    assert seen == ["/v1/models"]
