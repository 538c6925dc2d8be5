"""`laneway.openai.OpenAI` / `AsyncOpenAI`: the `openai` SDK's client shape over a router.
Every answer, chunk and event is validated by the SDK's own pydantic types; errors are the
SDK's classes as well as Laneway's."""

import asyncio
import json
import pickle
import threading
import warnings

import openai
import pydantic
import pytest

import laneway
from laneway.openai import AsyncOpenAI, OpenAI, OpenAIObject
from laneway.testing import Emulator

TERRA = "openai.gpt-5.6-terra"
HAIKU = "anthropic.claude-haiku-4-5-20251001-v1:0"
NOVA = "amazon.nova-lite-v1:0"
WEATHER = {"type": "function", "function": {"name": "weather", "description": "Weather for a city", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
RESPONSES_WEATHER = {"type": "function", "name": "weather", "description": "Weather for a city", "parameters": WEATHER["function"]["parameters"]}
CONFIG = {"models": {"laneway-demo-llm": {"provider": "sagemaker", "endpoints": [
    {"name": "laneway-demo-llm", "region": "us-east-1", "format": "tgi"}], "price": {"input_per_1k": 0.0002, "output_per_1k": 0.0006}}}}

CHUNK = pydantic.TypeAdapter(openai.types.chat.ChatCompletionChunk)
EVENT = pydantic.TypeAdapter(openai.types.responses.ResponseStreamEvent)


@pytest.fixture(scope="module")
def client(emulator):
    return OpenAI(config=CONFIG, **emulator.router_kwargs())


def completion_of(c):
    return openai.types.chat.ChatCompletion.model_validate(c.model_dump())


def test_a_chat_completion_has_the_sdks_shape_and_laneways_decision(client):
    c = client.chat.completions.create(
        model=TERRA,
        messages=[{"role": "developer", "content": "Be brief."}, {"role": "user", "content": "Say hello."}],
        max_completion_tokens=400, reasoning_effort="low", seed=7,
        extra_body={"laneway": {"slo": "interactive", "task_id": "t-1"}},
    )
    sdk = completion_of(c)
    assert sdk.choices[0].message.content == c.choices[0].message.content and c.choices[0].message.content
    assert c.object == "chat.completion" and c.model == TERRA
    assert c.usage.total_tokens == c.usage.prompt_tokens + c.usage.completion_tokens
    assert (c.laneway.decision.provider, c.laneway.decision.api) == ("bedrock", "openai-runtime")
    assert c.laneway.cost_usd > 0 and c.laneway.timings.total_ms >= 0
    assert c.made_up_field is None
    reasons = c.laneway.decision.reasons
    assert any(r.reason == "field_not_honoured" and r.field == "seed" for r in reasons)
    # The views copy, pickle and dump as the SDK's models do.
    assert pickle.loads(pickle.dumps(c)) == c
    assert "refusal" not in c.to_dict()["choices"][0]["message"] and "refusal" in c.model_dump()["choices"][0]["message"]
    assert json.loads(c.to_json())["id"] == c.id
    # Equal by value and mutable, so unhashable, as the SDK's pydantic models are.
    with pytest.raises(TypeError, match="unhashable"):
        hash(c)


@pytest.mark.parametrize("model", [TERRA, HAIKU, NOVA, "nova", "laneway-demo-llm"])
def test_every_model_laneway_routes_answers_in_the_chat_shape(client, model):
    extra = {"laneway": {"family": model}} if model == "nova" else None
    c = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "Hello there"}], max_tokens=64, extra_body=extra)
    completion_of(c)
    assert c.choices[0].message.content
    stream = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "Hello there"}], max_tokens=64, stream=True, extra_body=extra)
    chunks = [CHUNK.validate_python(ch.model_dump()) for ch in stream]
    assert "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)


def test_a_streamed_tool_call_accumulates_as_the_sdks_chunks_do(client):
    stream = client.chat.completions.create(
        model=TERRA, messages=[{"role": "user", "content": "Weather in Oslo?"}],
        tools=[WEATHER], tool_choice="required", stream=True, stream_options={"include_usage": True},
    )
    calls, finish, usage, last = {}, None, None, None
    with stream:
        for chunk in stream:
            sdk = CHUNK.validate_python(chunk.model_dump())
            for choice in sdk.choices:
                finish = choice.finish_reason or finish
                for tc in choice.delta.tool_calls or []:
                    entry = calls.setdefault(tc.index, {"name": "", "arguments": ""})
                    entry["name"] += tc.function.name or ""
                    entry["arguments"] += tc.function.arguments or ""
            usage = sdk.usage or usage
            last = chunk
    assert finish == "tool_calls"
    assert calls[0]["name"] == "weather" and "city" in json.loads(calls[0]["arguments"])
    assert usage.completion_tokens > 0
    assert last.laneway.decision.model == TERRA


def test_a_chat_agent_loop_sends_the_answer_back_as_it_came(client):
    messages = [{"role": "user", "content": "Weather in Oslo?"}]
    first = client.chat.completions.create(model=TERRA, messages=messages, tools=[WEATHER], tool_choice="required")
    message = first.choices[0].message
    messages.append(message)
    for call in message.tool_calls:
        messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps({"celsius": 21})})
    second = client.chat.completions.create(model=TERRA, messages=messages, tools=[WEATHER], tool_choice=openai.NOT_GIVEN)
    assert second.choices[0].finish_reason == "stop" and second.choices[0].message.content


def test_a_response_with_reasoning_and_its_stream_are_the_sdks_events(client):
    r = client.responses.create(model=TERRA, instructions="Think, then answer.", input="Plan a trip to Lisbon.", reasoning={"effort": "low", "summary": "auto"})
    sdk = openai.types.responses.Response.model_validate(r.model_dump())
    assert sdk.status == "completed" and sdk.output_text == r.output_text and r.output_text
    assert r.output[0].type == "reasoning" and r.usage.output_tokens_details.reasoning_tokens > 0
    raw = list(client.responses.create(model=TERRA, input="Plan a trip to Lisbon.", reasoning={"effort": "low"}, stream=True))
    events = [EVENT.validate_python(e.model_dump()) for e in raw]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert events[0].type == "response.created" and events[-1].type == "response.completed"
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text and events[-1].response.output_text == text
    assert raw[-1].response.laneway.decision.model == TERRA


def test_a_responses_agent_loop_sends_output_items_and_reasoning_back(client):
    first = client.responses.create(model=TERRA, input=[{"role": "user", "content": "Weather in Oslo?"}], tools=[RESPONSES_WEATHER], tool_choice="required", reasoning={"effort": "low"})
    calls = [o for o in first.output if o.type == "function_call"]
    assert calls and calls[0].name == "weather"
    follow = [{"role": "user", "content": "Weather in Oslo?"}, *first.output]
    follow += [{"type": "function_call_output", "call_id": c.call_id, "output": json.dumps({"celsius": 21})} for c in calls]
    second = client.responses.create(model=TERRA, input=follow, tools=[RESPONSES_WEATHER], reasoning={"effort": "low"})
    assert second.status == "completed" and second.output_text


def test_claude_answers_in_the_responses_shape(client):
    r = client.responses.create(model=HAIKU, input="Hello", max_output_tokens=64)
    openai.types.responses.Response.model_validate(r.model_dump())
    assert r.laneway.decision.provider == "bedrock" and r.output_text


def test_structured_output_by_either_api_conforms(client):
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city", "days"], "additionalProperties": False}
    c = client.chat.completions.create(model=TERRA, messages=[{"role": "user", "content": "A trip"}], response_format={"type": "json_schema", "json_schema": {"name": "trip", "schema": schema, "strict": True}})
    assert set(json.loads(c.choices[0].message.content)) == {"city", "days"}
    r = client.responses.create(model=HAIKU, input="A trip", text={"format": {"type": "json_schema", "name": "trip", "schema": schema, "strict": True}})
    assert set(json.loads(r.output_text)) == {"city", "days"}


def test_options_laneway_does_not_send_are_said_and_timeout_is_the_deadline(client):
    c = client.chat.completions.create(model=NOVA, messages=[{"role": "user", "content": "hi"}], extra_headers={"X-Trace": "1"}, extra_query={"a": "b"}, timeout=30)
    fields = {r.field for r in c.laneway.decision.reasons if r.reason == "field_not_honoured"}
    assert {"extra_headers", "extra_query"} <= fields
    with pytest.warns(UserWarning, match="max_retries"):
        OpenAI(router=client.router, max_retries=2)
    with pytest.warns(UserWarning, match="not a Bedrock API key"):
        OpenAI(router=client.router, api_key="sk-abc")


def test_bad_requests_are_the_sdks_and_laneways_errors(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=TERRA, messages=[{"role": "user", "content": "x"}], n=2)
    assert isinstance(e.value, laneway.InvalidRequestError)
    assert e.value.status_code == 400 and e.value.field == "n" and e.value.response.status_code == 400
    with pytest.raises(openai.BadRequestError, match="previous_response_id"):
        client.responses.create(model=TERRA, input="x", previous_response_id="resp_1")
    with pytest.raises(laneway.InvalidRequestError, match="laneway.sloo"):
        client.chat.completions.create(model=TERRA, messages=[{"role": "user", "content": "x"}], extra_body={"laneway": {"sloo": "x"}})


def test_throttling_everywhere_is_a_rate_limit_error_raised_by_create_streamed_or_not():
    with Emulator(scenario="fast") as emu:
        for region in ("us-east-1", "us-west-2", "eu-west-1"):
            emu.add_fault({"kind": "throttle", "model": NOVA, "region": region})
        client = OpenAI(config={"routing": {"max_attempts": 2}}, **emu.router_kwargs())
        body = {"model": NOVA, "messages": [{"role": "user", "content": "x"}], "extra_body": {"laneway": {"deadline_ms": 3000}}}
        with pytest.raises(openai.RateLimitError) as e:
            client.chat.completions.create(**body)
        assert isinstance(e.value, laneway.LanewayError) and e.value.status_code == 429
        # As the SDK does, a stream that cannot begin fails in `create`, not on iteration.
        with pytest.raises(openai.RateLimitError):
            client.chat.completions.create(**body, stream=True)


def test_a_timeout_is_the_calls_deadline_per_call_or_for_the_client():
    with Emulator(scenario="fast") as emu:
        for region in ("us-east-1", "us-west-2", "eu-west-1"):
            emu.add_fault({"kind": "stall", "model": NOVA, "region": region})
        messages = [{"role": "user", "content": "x"}]
        for client, kw in ((OpenAI(**emu.router_kwargs()), {"timeout": 0.4}), (OpenAI(timeout=0.4, **emu.router_kwargs()), {"timeout": openai.NOT_GIVEN})):
            with pytest.raises(openai.APITimeoutError) as e:
                client.chat.completions.create(model=NOVA, messages=messages, **kw)
            assert "DeadlineExceeded" in str(e.value) and e.value.attempts[0]["code"] == "DeadlineExceeded", e.value


def test_closing_a_stream_early_ends_it(client):
    stream = client.chat.completions.create(model=NOVA, messages=[{"role": "user", "content": "Tell me a long story"}], max_tokens=400, stream=True)
    first = next(iter(stream))
    # An iterator let go of does not end the stream; close() does.
    second = next(stream)
    assert first.object == second.object == "chat.completion.chunk"
    stream.close()
    assert list(stream) == []


def test_a_stream_closed_from_another_thread_while_a_read_waits_ends_that_read():
    with Emulator(scenario="fast") as emu:
        for region in ("us-east-1", "us-west-2", "eu-west-1"):
            emu.add_fault({"kind": "stall_mid_stream", "model": NOVA, "region": region, "after_tokens": 2})
        client = OpenAI(**emu.router_kwargs())
        stream = client.chat.completions.create(model=NOVA, messages=[{"role": "user", "content": "A story"}], max_tokens=200, stream=True)
        got, done = [], threading.Event()

        def read():
            got.extend(stream)
            done.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        # The reader is parked on the stalled stream (the idle limit is the class's 30 s).
        assert not done.wait(0.3)
        stream.close()
        # Well within the idle limit: the waiting read ended with the close.
        assert done.wait(10), "the read waiting on the stall did not end"
        assert got and got[0].object == "chat.completion.chunk"


def test_async_clients_answer_whole_and_streamed_many_at_once(emulator):
    async def main():
        client = AsyncOpenAI(**emulator.router_kwargs())
        whole = await asyncio.gather(*(client.chat.completions.create(model=NOVA, messages=[{"role": "user", "content": f"Hi {i}"}], max_tokens=32) for i in range(8)))
        assert all(completion_of(c).choices[0].message.content for c in whole)
        stream = await client.responses.create(model=TERRA, input="Tell me a story", stream=True)
        events = []
        async with stream:
            async for e in stream:
                events.append(EVENT.validate_python(e.model_dump()))
        assert events[-1].type == "response.completed"
        stream = await client.chat.completions.create(model=NOVA, messages=[{"role": "user", "content": "A long story"}], max_tokens=400, stream=True)
        async for _ in stream:
            break
        await stream.close()
        with pytest.raises(openai.BadRequestError):
            await client.chat.completions.create(model=NOVA, messages=[])
    asyncio.run(main())


def test_the_views_read_like_the_sdks_models():
    v = OpenAIObject({"a": {"b": [{"c": 1}]}, "n": None})
    assert v.a.b[0].c == 1 and v.n is None and v.missing is None
    assert v.to_dict() == {"a": {"b": [{"c": 1}]}}
    v.x = OpenAIObject({"y": 2})
    assert v.model_dump()["x"] == {"y": 2}
    # Equal by value to a view of the same fields, unequal to anything else, and unhashable.
    assert OpenAIObject({"y": 2}) == v.x and OpenAIObject({"y": 3}) != v.x
    assert v.x != {"y": 2} and v.x != None  # noqa: E711
    with pytest.raises(TypeError):
        hash(v.x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert repr(v).startswith("OpenAIObject(")
