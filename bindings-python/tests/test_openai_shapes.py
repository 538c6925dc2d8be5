"""Laneway's answers to `openai`-shaped bodies (the core's `surface::openai`, through the native
router) parse in the `openai` SDK's own types, with Laneway's decision beside them."""

import openai
import pytest

import laneway

TERRA = "openai.gpt-5.6-terra"


def native(router):
    return router._native


def test_a_chat_completion_validates_as_the_sdks_type_and_says_what_it_went_without(router):
    d = native(router).openai_blocking("chat", {
        "model": TERRA,
        "messages": [{"role": "developer", "content": "Be brief."}, {"role": "user", "content": "What is the weather in Oslo?"}],
        "tools": [{"type": "function", "function": {"name": "weather", "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
        "tool_choice": "required",
        "seed": 7,
        "laneway": {"slo": "interactive"},
    })
    c = openai.types.chat.ChatCompletion.model_validate(d)
    assert c.choices[0].finish_reason == "tool_calls"
    call = c.choices[0].message.tool_calls[0]
    assert call.function.name == "weather" and "city" in call.function.arguments
    assert c.usage.total_tokens > 0
    reasons = d["laneway"]["decision"]["reasons"]
    assert any(r["reason"] == "field_not_honoured" and r["field"] == "seed" for r in reasons), reasons
    assert (d["laneway"]["decision"]["provider"], d["laneway"]["decision"]["api"]) == ("bedrock", "openai-runtime")


def test_a_response_validates_as_the_sdks_type_with_its_reasoning_item(router):
    d = native(router).openai_blocking("responses", {
        "model": TERRA,
        "instructions": "Think, then answer.",
        "input": "Plan a trip to Lisbon.",
        "reasoning": {"effort": "low"},
    })
    r = openai.types.responses.Response.model_validate(d)
    assert r.status == "completed"
    assert r.output[0].type == "reasoning" and r.output[0].encrypted_content
    assert r.output_text
    assert r.usage.output_tokens_details.reasoning_tokens > 0


def test_bad_bodies_are_refused_by_name(router):
    with pytest.raises(laneway.InvalidRequestError, match="previous_response_id"):
        native(router).openai_blocking("responses", {"model": TERRA, "input": "x", "previous_response_id": "resp_1"})
    with pytest.raises(laneway.InvalidRequestError, match="n"):
        native(router).openai_blocking("chat", {"model": TERRA, "messages": [{"role": "user", "content": "x"}], "n": 2})
