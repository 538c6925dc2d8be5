"""The official `openai` Python SDK pointed at the emulator's Bedrock OpenAI-compatible Chat
Completions endpoint (`base_url`), with a Bedrock API key: whole and streamed answers, tools,
structured output, and the SDK's error classes for Bedrock's errors."""

import json

import openai
import pytest

from laneway.testing import Emulator

GPT_OSS = "openai.gpt-oss-120b-1:0"
# bedrock-mantle's id for it; mantle serves it by both APIs, runtime by Chat Completions only.
GPT_OSS_MANTLE = "openai.gpt-oss-120b"


@pytest.fixture(scope="module")
def emu():
    with Emulator(scenario="fast") as e:
        yield e


def client(emu, region="us-east-1", **kw):
    """bedrock-runtime's OpenAI-compatible endpoint."""
    return openai.OpenAI(base_url=f"{emu.url}/openai/v1", api_key=emu.bedrock_api_key(region), max_retries=0, **kw)


def mantle(emu, region="us-east-1", prefix="v1"):
    """bedrock-mantle's (`/v1`; `/mantle/openai/v1` for its `/openai/v1` models)."""
    base = f"{emu.url}/v1" if prefix == "v1" else f"{emu.url}/mantle/openai/v1"
    return openai.OpenAI(base_url=base, api_key=emu.bedrock_api_key(region), max_retries=0)


def test_a_whole_chat_completion_parses_in_the_sdks_types(emu):
    r = client(emu).chat.completions.create(
        model=GPT_OSS,
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hello."}],
        max_completion_tokens=2000, reasoning_effort="low",
    )
    assert isinstance(r, openai.types.chat.ChatCompletion)
    assert r.object == "chat.completion" and r.model == GPT_OSS
    assert r.choices[0].message.role == "assistant" and r.choices[0].message.content
    assert r.choices[0].finish_reason in ("stop", "length")
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens > 0


def test_a_streamed_chat_completion_ends_with_usage_and_done(emu):
    stream = client(emu).chat.completions.create(
        model=GPT_OSS,
        messages=[{"role": "user", "content": "Tell me a story."}],
        max_completion_tokens=2000, reasoning_effort="low",
        stream=True,
        stream_options={"include_usage": True},
    )
    text, finish, usage = [], None, None
    for chunk in stream:
        assert chunk.object == "chat.completion.chunk"
        if chunk.choices:
            text.append(chunk.choices[0].delta.content or "")
            finish = chunk.choices[0].finish_reason or finish
        if chunk.usage:
            usage = chunk.usage
    assert "".join(text) and finish in ("stop", "length")
    assert usage is not None and usage.completion_tokens > 0


def test_a_forced_tool_call_and_structured_output(emu):
    c = client(emu)
    tools = [{"type": "function", "function": {"name": "weather", "description": "Weather for a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
    r = c.chat.completions.create(
        model=GPT_OSS,
        messages=[{"role": "user", "content": "Weather in Paris?"}],
        tools=tools,
        tool_choice={"type": "function", "function": {"name": "weather"}},
        max_completion_tokens=2000, reasoning_effort="low",
    )
    call = r.choices[0].message.tool_calls[0]
    assert r.choices[0].finish_reason == "tool_calls" and call.function.name == "weather"
    assert "city" in json.loads(call.function.arguments)
    streamed = list(c.chat.completions.create(
        model=GPT_OSS, messages=[{"role": "user", "content": "Weather in Paris?"}], tools=tools,
        tool_choice={"type": "function", "function": {"name": "weather"}}, max_completion_tokens=2000, reasoning_effort="low", stream=True,
    ))
    arguments = "".join(tc.function.arguments or "" for ch in streamed if ch.choices for tc in (ch.choices[0].delta.tool_calls or []))
    assert "city" in json.loads(arguments)
    schema = {"type": "object", "properties": {"answer": {"type": "string"}, "score": {"type": "integer"}}, "required": ["answer", "score"]}
    r = c.chat.completions.create(
        model=GPT_OSS,
        messages=[{"role": "user", "content": "Rate it."}],
        response_format={"type": "json_schema", "json_schema": {"name": "rating", "schema": schema}},
        max_completion_tokens=2000, reasoning_effort="low",
    )
    out = json.loads(r.choices[0].message.content)
    assert isinstance(out["answer"], str) and isinstance(out["score"], int)


def test_bedrock_errors_raise_the_sdks_classes(emu):
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=f"{emu.url}/openai/v1", api_key="not-a-key", max_retries=0).chat.completions.create(
            model=GPT_OSS, messages=[{"role": "user", "content": "x"}])
    with pytest.raises(openai.BadRequestError) as e:
        client(emu).chat.completions.create(model="openai.no-such-model", messages=[{"role": "user", "content": "x"}])
    assert "model identifier" in str(e.value)
    emu.add_fault({"kind": "throttle", "model": GPT_OSS, "region": "eu-west-1"})
    with pytest.raises(openai.RateLimitError):
        client(emu, region="eu-west-1").chat.completions.create(model=GPT_OSS, messages=[{"role": "user", "content": "x"}])


def test_a_whole_response_and_its_output_text(emu):
    r = mantle(emu).responses.create(
        model=GPT_OSS_MANTLE, instructions="Be brief.", input="Say hello.", max_output_tokens=2000, reasoning={"effort": "low"},
    )
    assert isinstance(r, openai.types.responses.Response)
    assert r.status == "completed" and r.output_text
    assert [item.type for item in r.output] == ["reasoning", "message"]
    assert r.usage.output_tokens_details.reasoning_tokens > 0
    assert r.usage.total_tokens == r.usage.input_tokens + r.usage.output_tokens


def test_a_streamed_response_passes_the_sdks_accumulator(emu):
    c = mantle(emu)
    with c.responses.stream(model=GPT_OSS_MANTLE, input="Tell me a story.", max_output_tokens=2000, reasoning={"effort": "low"}) as stream:
        deltas = [ev.delta for ev in stream if ev.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert "".join(deltas) == final.output_text and final.output_text
    tools = [{"type": "function", "name": "weather", "description": "Weather for a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]
    with c.responses.stream(model=GPT_OSS_MANTLE, input="Weather in Paris?", tools=tools, tool_choice={"type": "function", "name": "weather"}, max_output_tokens=2000, reasoning={"effort": "low"}) as stream:
        final = stream.get_final_response()
    call = [item for item in final.output if item.type == "function_call"][0]
    assert call.name == "weather" and "city" in json.loads(call.arguments)
    # The turn after: the tool's output goes back as an input item.
    r = c.responses.create(model=GPT_OSS_MANTLE, max_output_tokens=2000, reasoning={"effort": "low"}, input=[
        {"role": "user", "content": "Weather in Paris?"},
        {"type": "function_call", "call_id": call.call_id, "name": "weather", "arguments": call.arguments},
        {"type": "function_call_output", "call_id": call.call_id, "output": "21C"},
    ])
    assert r.output_text


def test_structured_output_through_text_format(emu):
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"], "additionalProperties": False}
    r = mantle(emu).responses.create(
        model=GPT_OSS_MANTLE, input="Answer.", max_output_tokens=2000, reasoning={"effort": "low"},
        text={"format": {"type": "json_schema", "name": "answer", "schema": schema, "strict": True}},
    )
    assert isinstance(json.loads(r.output_text)["answer"], str)


def test_a_broken_stream_and_an_outage_raise_the_sdks_errors():
    with Emulator(scenario="fast") as emu:
        emu.add_fault({"kind": "break_stream", "model": GPT_OSS, "region": "us-east-1", "after_tokens": 3})
        c = client(emu)
        with pytest.raises(openai.APIError, match="interrupted"):
            for _ in c.chat.completions.create(model=GPT_OSS, messages=[{"role": "user", "content": "Tell me a story."}], max_completion_tokens=2000, stream=True):
                pass
        with pytest.raises(openai.APIError, match="interrupted"):
            with mantle(emu).responses.stream(model=GPT_OSS_MANTLE, input="Tell me a story.", max_output_tokens=2000) as stream:
                for _ in stream:
                    pass
        emu.add_fault({"kind": "outage", "model": GPT_OSS, "region": "us-west-2"})
        with pytest.raises(openai.InternalServerError) as e:
            client(emu, region="us-west-2").chat.completions.create(model=GPT_OSS, messages=[{"role": "user", "content": "x"}])
        assert e.value.status_code == 503


def test_each_endpoint_serves_its_models_by_their_own_ids_and_apis(emu):
    with pytest.raises(openai.BadRequestError, match="does not support"):
        client(emu).responses.create(model=GPT_OSS, input="x")
    with pytest.raises(openai.NotFoundError):
        mantle(emu).chat.completions.create(model=GPT_OSS, messages=[{"role": "user", "content": "x"}])
    with pytest.raises(openai.NotFoundError):
        mantle(emu).chat.completions.create(model="us." + GPT_OSS_MANTLE, messages=[{"role": "user", "content": "x"}])
    with pytest.raises(openai.BadRequestError, match="isn't supported on this route"):
        mantle(emu, prefix="openai/v1").chat.completions.create(model=GPT_OSS_MANTLE, messages=[{"role": "user", "content": "x"}])
    with pytest.raises(openai.BadRequestError, match="does not support"):
        client(emu).chat.completions.create(model="amazon.nova-lite-v1:0", messages=[{"role": "user", "content": "x"}])
    assert GPT_OSS_MANTLE in [m.id for m in mantle(emu).models.list()]
