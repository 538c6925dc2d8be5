"""The Python API against the emulator: async, streaming, sync, errors, cancellation, load."""

import asyncio
import json
import os

import pytest

import laneway
from laneway.testing import Emulator


async def test_generate_returns_a_typed_response(router):
    r = await router.generate("Summarise the refund policy", family="nova", slo="background", max_tokens=24)
    assert isinstance(r, laneway.Response)
    assert r.text and r.usage.output_tokens > 0 and r.usage.input_tokens > 0
    assert r.cost_usd > 0
    assert r.decision.family == "nova"
    assert r.decision.tier == "flex"
    assert r.timings.total_ms > 0
    d = r.to_dict()
    assert d["decision"]["model"] == r.decision.model
    assert any(reason["reason"] == "tier_from_slo" for reason in r.decision.reasons)


async def test_requests_as_classes_and_dicts(router):
    req = laneway.Request(messages=[laneway.Message("user", "Hello"), laneway.Message("assistant", "Hi!"), laneway.Message("user", "Tell me more")], model="amazon.nova-lite-v1:0", max_tokens=8, slo="interactive", ttft_target_ms=2000)
    r = await router.generate(req)
    assert r.decision.model == "amazon.nova-lite-v1:0"
    r = await router.generate({"messages": [{"role": "user", "content": [{"text": "Hi"}]}], "model": {"family": "nova"}, "inference": {"max_tokens": 8}})
    assert r.decision.family == "nova"


async def test_stream_yields_deltas_then_the_response(router):
    deltas, completed = [], None
    async for ev in router.stream("Tell me a story", family="nova", max_tokens=20):
        if ev.type == "text_delta":
            deltas.append(ev.text)
        elif ev.type == "completed":
            completed = ev.response
    assert len(deltas) > 1
    assert completed is not None and completed.text == "".join(deltas)
    assert completed.timings.ttft_ms is not None


def test_sync_twins(router):
    r = router.generate_sync("Hello", family="nova", max_tokens=8)
    assert r.text
    events = list(router.stream_sync("Hello", family="nova", max_tokens=8))
    assert events[-1].type == "completed"
    plan = router.plan("Hello", family="claude", slo="interactive")
    assert plan["attempts"][0]["tier"] == "priority"


def test_router_from_a_dict_and_a_toml_file(emulator, tmp_path):
    config = {"families": {"small": {"variants": ["amazon.nova-micro-v1:0", "amazon.nova-lite-v1:0"], "default_variant": "amazon.nova-micro-v1:0"}}}
    r = laneway.Router(config, **emulator.router_kwargs()).generate_sync("Hi", family="small", max_tokens=4)
    assert r.decision.model == "amazon.nova-micro-v1:0"
    path = tmp_path / "laneway.toml"
    path.write_text('[families.small]\nvariants = ["amazon.nova-micro-v1:0"]\n')
    r = laneway.Router(path, **emulator.router_kwargs()).generate_sync("Hi", family="small", max_tokens=4)
    assert r.decision.model == "amazon.nova-micro-v1:0"


def test_bad_configuration_and_requests_are_typed_errors(emulator):
    with pytest.raises(laneway.ConfigError) as e:
        laneway.Router('[families.x]\nvariants = ["no-such-model"]\n', **emulator.router_kwargs())
    assert e.value.kind == "config" and "families.x.variants" in str(e.value)
    router = laneway.Router(**emulator.router_kwargs())
    with pytest.raises(laneway.InvalidRequestError) as e:
        router.generate_sync("Hi", family="no-such-family")
    assert "no-such-family" in str(e.value)
    with pytest.raises(laneway.InvalidRequestError):
        router.generate_sync({"messages": "not a list"})
    with pytest.raises(laneway.InvalidRequestError):
        router.generate_sync({"messages": []})
    assert issubclass(laneway.InvalidRequestError, laneway.LanewayError)


async def test_service_errors_map_to_their_classes(emulator, router):
    emulator.add_fault({"kind": "outage", "model": "amazon.nova-pro-v1:0"})
    with pytest.raises(laneway.AllTargetsFailedError) as e:
        # The outage outlasts the call: its retry rounds end at this deadline.
        await router.generate("Hi", model="amazon.nova-pro-v1:0", max_tokens=4, deadline_ms=300)
    assert e.value.kind == "all_targets_failed"
    assert len(e.value.attempts) >= 2 and e.value.attempts[0]["kind"] == "unavailable"
    # One target only, retried: the service's own error class.
    with pytest.raises(laneway.UnavailableError) as e:
        await router.generate("Hi", model="amazon.nova-pro-v1:0", max_tokens=4, residency={"regions": ["us-east-1"]}, deadline_ms=300)
    assert e.value.code == "ServiceUnavailableException" and e.value.region == "us-east-1"


async def test_a_broken_stream_says_how_much_was_delivered(emulator, router):
    emulator.add_fault({"kind": "break_stream", "model": "amazon.nova-micro-v1:0", "after_tokens": 3})
    got = []
    with pytest.raises(laneway.StreamInterruptedError) as e:
        async for ev in router.stream("Tell me a long story", model="amazon.nova-micro-v1:0", max_tokens=40):
            got.append(ev)
    assert e.value.delivered["deltas"] == len([g for g in got if g.type == "text_delta"]) == 3


async def until(what, condition, tries=5000):
    """Asks `condition` (a round trip to the emulator each time) until it holds, bounded by
    tries, not by a clock; from a thread, so that the event loop runs the calls meanwhile."""

    def ask():
        return any(condition() for _ in range(tries))

    assert await asyncio.to_thread(ask), f"{what}: never happened"


async def test_cancelling_the_task_cancels_the_request():
    with Emulator(scenario="startup", time_scale=3.0) as slow:
        router = laneway.Router(**slow.router_kwargs())

        def total(key):
            return sum(r[key] for r in slow.counters())

        # An interactive call with a TTFT target runs as a stream (it may hedge), which the
        # emulator watches: it counts a stream whose client went away as cancelled. Cancelled
        # once the emulator has it (a 400-token answer at a third of real speed takes seconds).
        task = asyncio.create_task(router.generate("Write an essay", model="amazon.nova-pro-v1:0", max_tokens=400, slo="interactive", ttft_target_ms=5000))
        await until("the request reached the emulator", lambda: total("requests") >= 1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await until("the emulator saw the stream cancelled", lambda: total("cancelled") >= 1)
        assert total("cancelled") == total("requests") >= 1

        # Leaving an `async for` early cancels the stream too.
        async for ev in router.stream("Another essay", model="amazon.nova-lite-v1:0", max_tokens=400):
            if ev.type == "text_delta":
                break
        await until("the emulator saw the second stream cancelled", lambda: total("cancelled") >= 2)
        assert total("cancelled") == total("requests") >= 2


async def test_a_thousand_concurrent_requests():
    # A scenario with capacity for them: the point is the binding, not the emulator's throttling.
    scenario = os.path.join(os.path.dirname(__file__), "many.toml")
    with Emulator(scenario=scenario) as emu:
        router = laneway.Router(**emu.router_kwargs())
        # Several rounds: completions racing the event loop's wake-ups must never be lost.
        sent = 0
        for round in range(1, 4):
            results = await asyncio.wait_for(
                asyncio.gather(*(router.generate(f"Question {i}", model="amazon.nova-lite-v1:0", max_tokens=4) for i in range(1000))),
                timeout=60,
            )
            assert len(results) == 1000 and all(r.text for r in results)
            sent += sum(r.decision.attempts_sent for r in results)
            # Every call answered once; a hedge's loser may have finished too.
            ok = sum(r["ok"] for r in emu.counters())
            assert 1000 * round <= ok <= sent, (ok, sent)


def test_the_router_works_in_a_forked_child(router):
    router.generate_sync("Warm up", family="nova", max_tokens=4)
    pid = os.fork()
    if pid == 0:
        try:
            ok = router.generate_sync("From the child", family="nova", max_tokens=4).text != ""
            os._exit(0 if ok else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    assert router.generate_sync("Parent again", family="nova", max_tokens=4).text


@pytest.mark.parametrize(
    "fault, error",
    [
        ("throttle", laneway.ThrottledError),
        ("model_not_ready", laneway.ModelNotReadyError),
        ("internal_error", laneway.ServiceInternalError),
        ("outage", laneway.UnavailableError),
    ],
)
def test_each_service_failure_has_its_class(fault, error):
    with Emulator(scenario="fast") as emu:
        emu.add_fault({"kind": fault, "model": "amazon.nova-micro-v1:0", "region": "us-east-1"})
        router = laneway.Router(**emu.router_kwargs())
        with pytest.raises(error) as e:
            # One target only (a region list allows no profile): its own error comes back.
            router.generate_sync("Hi", model="amazon.nova-micro-v1:0", residency={"regions": ["us-east-1"]}, max_tokens=4, deadline_ms=300)
        assert isinstance(e.value, laneway.LanewayError)
        assert e.value.region == "us-east-1" and e.value.target == "amazon.nova-micro-v1:0"


def test_refusals_have_their_classes(emulator):
    wrong_key = dict(emulator.router_kwargs(), secret_access_key="not-the-secret")
    with pytest.raises(laneway.AuthenticationError) as e:
        laneway.Router(**wrong_key).generate_sync("Hi", model="amazon.nova-lite-v1:0", max_tokens=4)
    assert e.value.kind == "authentication" and e.value.http_status == 403 and e.value.code == "InvalidSignatureException"
    # A model the configuration knows and the service does not.
    config = '[models."amazon.titan-text-express-v1"]\nprovider = "bedrock"\nregions = ["us-east-1"]\nprice = { input_per_1k = 0.0002, output_per_1k = 0.0006 }\n'
    with pytest.raises(laneway.ValidationError) as e:
        laneway.Router(config, **emulator.router_kwargs()).generate_sync("Hi", model="amazon.titan-text-express-v1", max_tokens=4)
    assert e.value.kind == "validation" and e.value.code == "ValidationException"


async def test_metrics_and_task_costs(emulator):
    router = laneway.Router(**emulator.router_kwargs())
    for i in range(3):
        await router.generate(f"Step {i}", family="nova", max_tokens=8, task_id="t1", slo="interactive", ttft_target_ms=5000)
    assert router.finish_task("t1", True) and not router.finish_task("t1", True)
    m = router.metrics()
    assert sum(s["requests"] for _, s in m["lanes"]) == 3
    assert m["tasks"]["tasks"] == 1 and m["tasks"]["cost_usd"] > 0
    assert m["slo"]["interactive"]["ttft_targeted"] == 3
    assert "gen_ai_client_operation_duration_seconds" in router.prometheus()


async def test_feedback_reaches_the_family_router():
    # An emulator of its own: the shared one keeps other tests' faults on Nova's variants.
    with Emulator(scenario="fast") as emu:
        await _feedback_reaches_the_family_router(laneway.Router(**emu.router_kwargs()))


async def _feedback_reaches_the_family_router(router):
    answer = await router.generate("Extract the city from: Ana lives in Lisbon.", family="nova", max_tokens=8)
    call_id = answer.decision.call_id
    assert call_id.startswith("lw1:") and call_id.endswith("nova/" + answer.decision.model)
    router.feedback(call_id, False)
    cells = router.feedback_report()["nova"]
    assert [(c["kind"], sum(c["outcomes"]["total"]), sum(c["outcomes"]["good"])) for c in cells] == [("extract", 1.0, 0.0)]
    # A task's outcome is feedback on its routed calls.
    await router.generate("Explain tides briefly.", family="nova", max_tokens=8, task_id="learn")
    assert router.finish_task("learn", True)
    assert {c["kind"] for c in router.feedback_report()["nova"]} == {"extract", "explain"}

    with pytest.raises(laneway.InvalidRequestError, match="call_id"):
        router.feedback("not-a-call-id", True)
    # The id of a call that named its model: no family router chose it.
    with pytest.raises(laneway.InvalidRequestError, match="no policy learns"):
        router.feedback("lw1:0123456789abcdef:-:/amazon.nova-pro-v1:0", True)


@pytest.fixture
def failpoint():
    """Arms a core failpoint for one test; always disarmed after it."""
    yield laneway._laneway._arm_failpoint
    laneway._laneway._arm_failpoint(None)


def test_a_panic_in_any_entry_point_is_a_typed_internal_error(router, failpoint):
    def internal(excinfo, where):
        assert isinstance(excinfo.value, laneway.LanewayInternalError)
        assert isinstance(excinfo.value, Exception)  # `except Exception` catches it
        assert excinfo.value.kind == "laneway_internal"
        assert f"failpoint {where}" in str(excinfo.value)

    failpoint("plan")
    with pytest.raises(laneway.LanewayError) as e:
        router.plan("Hi", family="nova")
    internal(e, "plan")

    failpoint("generate")
    with pytest.raises(laneway.LanewayError) as e:
        router.generate_sync("Hi", family="nova", max_tokens=4)
    internal(e, "generate")
    with pytest.raises(laneway.LanewayError) as e:
        asyncio.run(router.generate("Hi", family="nova", max_tokens=4))
    internal(e, "generate")

    failpoint("stream_event")
    with pytest.raises(laneway.LanewayError) as e:
        for _ in router.stream_sync("Hi", family="nova", max_tokens=4):
            pass
    internal(e, "stream_event")

    async def consume():
        async for _ in router.stream("Hi", family="nova", max_tokens=4):
            pass

    with pytest.raises(laneway.LanewayError) as e:
        asyncio.run(consume())
    internal(e, "stream_event")

    failpoint("feedback")
    with pytest.raises(laneway.LanewayError) as e:
        router.feedback("lw1:0123456789abcdef:general.0:nova/amazon.nova-lite-v1:0", True)
    internal(e, "feedback")

    failpoint(None)
    assert router.generate_sync("Hi", family="nova", max_tokens=4).text


def test_a_stream_dropped_unfinished_releases_its_request():
    import gc

    # Real time: a 400-token answer takes seconds, so the stream is still open when dropped.
    with Emulator(scenario="startup") as emu:
        router = laneway.Router(**emu.router_kwargs())
        events = router.stream_sync("An essay", model="amazon.nova-lite-v1:0", max_tokens=400)
        first = next(events)
        assert first is not None
        del events
        gc.collect()

        def cancelled():
            return sum(r["cancelled"] for r in emu.counters())

        # No sleeping: ask the emulator (a round trip each time) until it has seen the
        # connection close; bounded.
        for _ in range(2000):
            if cancelled() == 1:
                break
        assert cancelled() == 1


async def test_boto3_converse_arguments_work_unchanged(router):
    """An app written for boto3 moves by changing the client: same keyword arguments, same
    response shape, Laneway's decision beside it."""
    kwargs = dict(
        modelId="amazon.nova-lite-v1:0",
        system=[{"text": "You book trips."}],
        messages=[
            {"role": "user", "content": [{"text": "Weather in Paris?"}, {"image": {"format": "png", "source": {"bytes": b"\x89PNG\r\n"}}}, {"document": {"format": "pdf", "name": "Itinerary (draft)", "source": {"bytes": b"%PDF-1.7 trip"}}}]},
            {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "weather", "input": {"city": "Paris"}}}]},
            {"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "content": [{"json": {"celsius": 21}}], "status": "success"}}]},
        ],
        toolConfig={"tools": [{"toolSpec": {"name": "weather", "description": "Weather for a city", "inputSchema": {"json": {"type": "object", "properties": {"city": {"type": "string"}}}}}}]},
        inferenceConfig={"maxTokens": 16, "temperature": 0.2},
    )
    out = await router.converse(**kwargs, laneway={"slo": {"class": "interactive"}})
    assert out["output"]["message"]["role"] == "assistant"
    assert out["output"]["message"]["content"][0]["text"]
    assert out["stopReason"] in ("end_turn", "max_tokens", "tool_use")
    assert out["usage"]["totalTokens"] == out["usage"]["inputTokens"] + out["usage"]["outputTokens"] + out["usage"]["cacheReadInputTokens"] + out["usage"]["cacheWriteInputTokens"]
    assert out["metrics"]["latencyMs"] >= 0
    assert out["laneway"]["decision"]["model"] == "amazon.nova-lite-v1:0"
    assert out["laneway"]["cost_usd"] > 0
    same = router.converse_sync(**kwargs)
    assert same["output"]["message"]["content"][0]["text"]

    with pytest.raises(laneway.InvalidRequestError) as e:
        router.converse_sync(**kwargs, promptVariables={"city": {"text": "Paris"}})
    assert e.value.field == "promptVariables" and e.value.code is None
    named = dict(kwargs, messages=[{"role": "user", "content": [{"document": {"format": "txt", "name": "notes.txt", "source": {"bytes": b"x"}}}]}])
    with pytest.raises(laneway.InvalidRequestError) as e:
        router.converse_sync(**named)
    assert e.value.field == "messages[0].content[0].document.name"


def test_boto3_tool_results_with_media_and_s3_sources_go_through(router):
    """A tool's result with a screenshot, a document and search results, and images and
    documents in S3, as boto3 writes them: carried to Bedrock, cited back."""
    out = router.converse_sync(
        modelId="anthropic.claude-sonnet-4-5-20250929-v1:0",
        messages=[
            {"role": "user", "content": [
                {"text": "Can I return it?"},
                {"image": {"format": "jpeg", "source": {"s3Location": {"uri": "s3://shots/item.jpg"}}}},
                {"document": {"format": "pdf", "name": "receipt", "source": {"s3Location": {"uri": "s3://docs/receipt.pdf", "bucketOwner": "123456789012"}}}},
            ]},
            {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "search", "input": {"q": "returns"}}}]},
            {"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "content": [
                {"image": {"format": "png", "source": {"bytes": b"\x89PNG\r\n"}}},
                {"document": {"format": "md", "name": "policy", "source": {"bytes": b"# Refunds within 30 days"}}},
                {"searchResult": {"source": "https://kb.example/42", "title": "Returns", "content": [{"text": "Refunds within 30 days."}], "citations": {"enabled": True}}},
            ]}}]},
        ],
        toolConfig={"tools": [{"toolSpec": {"name": "search", "description": "Searches", "inputSchema": {"json": {"type": "object"}}}}]},
        inferenceConfig={"maxTokens": 64},
    )
    blocks = out["output"]["message"]["content"]
    assert any("citationsContent" in b for b in blocks), blocks


async def test_the_whole_request_surface_as_a_dict(router):
    r = await router.generate({
        "model": {"model": "amazon.nova-lite-v1:0"},
        "system": [{"text": "Be brief."}, {"cache_point": {}}],
        "messages": [{"role": "user", "content": [{"text": "Which tool?"}, {"image": {"format": "png", "bytes": "iVBORw0KGgo="}}, {"document": {"format": "md", "name": "notes", "bytes": b"# notes"}}]}],
        "tools": [{"spec": {"name": "lookup", "description": "Looks up", "input_schema": {"type": "object"}}}],
        "tool_choice": "auto",
        "inference": {"max_tokens": 8, "top_p": 0.9, "stop_sequences": ["END"]},
        "slo": {"class": "interactive", "ttft_target": 2000},
    })
    assert r.text and r.decision.model == "amazon.nova-lite-v1:0"


def test_a_config_path_that_does_not_exist_is_an_error(emulator, tmp_path):
    with pytest.raises(laneway.ConfigError) as e:
        laneway.Router(str(tmp_path / "laneway.tml"), **emulator.router_kwargs())
    assert "laneway.tml" in str(e.value)
    path = tmp_path / "laneway.toml"
    path.write_text("[routing]\nmax_attempts = 2\n")
    assert laneway.Router(path, **emulator.router_kwargs()).generate_sync("Hi", family="nova", max_tokens=4).text
    assert laneway.Router({"routing": {"max_attempts": 2}}, **emulator.router_kwargs()).generate_sync("Hi", family="nova", max_tokens=4).text


async def test_tools_and_system_blocks_as_keyword_arguments(router):
    r = await router.generate(
        "Which city is warmer?",
        model="amazon.nova-lite-v1:0",
        system=[{"text": "Be brief."}, {"cache_point": {}}],
        tools=[{"name": "weather", "description": "Weather for a city", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}],
        tool_choice="weather",
        max_tokens=8,
    )
    assert r.decision.model == "amazon.nova-lite-v1:0"
    # The class passes what was given; the core reads it, as it reads keyword arguments.
    req = laneway.Request(prompt="x", tools=[{"name": "t", "input_schema": {"type": "object"}}], tool_choice="any").to_dict()
    assert req == {"prompt": "x", "tools": [{"name": "t", "input_schema": {"type": "object"}}], "tool_choice": "any"}
    with pytest.raises(laneway.InvalidRequestError) as e:
        await router.generate("x", model="amazon.nova-lite-v1:0", toolz=[])
    assert e.value.field == "toolz" and "tool_choice" in str(e.value)


SONNET = "anthropic.claude-sonnet-4-5-20250929-v1:0"


def _thinking_agent_turn(out):
    """The model's turn as an agent sends it back: its signed reasoning, then a tool call (the
    emulator answers text under automatic tool choice; Claude would call the tool here)."""
    reasoning = out["output"]["message"]["content"][0]
    assert "reasoningContent" in reasoning, out
    return {"role": "assistant", "content": [reasoning, {"toolUse": {"toolUseId": "t1", "name": "weather", "input": {"city": "Paris"}}}]}


async def test_a_thinking_agent_moves_from_boto3_by_changing_one_line(router, emulator):
    """Thinking, tools, structured output: the same kwargs work on boto3 pointed at the
    emulator and on Laneway, with the same answer shapes, and the reasoning goes back signed."""
    import boto3
    from botocore.config import Config

    from laneway.testing import ACCESS_KEY_ID, SECRET_ACCESS_KEY

    direct = boto3.client(
        "bedrock-runtime", region_name="us-east-1", endpoint_url=emulator.url,
        aws_access_key_id=ACCESS_KEY_ID, aws_secret_access_key=SECRET_ACCESS_KEY,
        config=Config(retries={"max_attempts": 1}),
    )
    tools = {"tools": [{"toolSpec": {"name": "weather", "description": "Weather", "inputSchema": {"json": {"type": "object", "properties": {"city": {"type": "string"}}}}}}]}
    first = [{"role": "user", "content": [{"text": "Weather in Paris?"}]}]
    kwargs = dict(
        inferenceConfig={"maxTokens": 4000}, toolConfig=tools,
        additionalModelRequestFields={"thinking": {"type": "enabled", "budget_tokens": 2048}},
    )
    for client, model in ((direct, "us." + SONNET), (router, SONNET)):
        converse = client.converse if client is direct else router.converse_sync
        out = converse(modelId=model, messages=first, **kwargs)
        block = out["output"]["message"]["content"][0]["reasoningContent"]["reasoningText"]
        assert block["text"] and block["signature"]
        follow = first + [_thinking_agent_turn(out), {"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "content": [{"json": {"c": 21}}]}}]}]
        again = converse(modelId=model, messages=follow, **kwargs)
        assert again["output"]["message"]["content"][-1]["text"]
        tampered = json_copy(follow)
        tampered[1]["content"][0]["reasoningContent"]["reasoningText"]["text"] += " (edited)"
        if client is direct:
            with pytest.raises(direct.exceptions.ValidationException, match="Invalid signature"):
                converse(modelId=model, messages=tampered, **kwargs)
        else:
            with pytest.raises(laneway.ValidationError, match="Invalid signature"):
                converse(modelId=model, messages=tampered, **kwargs)
    assert again["laneway"]["decision"]["model"] == SONNET
    assert any(r["reason"] == "reasoning_mapped" for r in again["laneway"]["decision"]["reasons"])

    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": False}
    out = await router.converse(
        modelId=SONNET, messages=first,
        outputConfig={"textFormat": {"type": "json_schema", "structure": {"jsonSchema": {"schema": json.dumps(schema)}}}},
        requestMetadata={"team": "travel"},
    )
    assert isinstance(json.loads(out["output"]["message"]["content"][0]["text"])["city"], str)


def json_copy(v):
    return json.loads(json.dumps(v))


async def test_reasoning_streams_as_its_own_event_kind(router):
    events = [e async for e in router.stream("Why?", model=SONNET, max_tokens=4000, reasoning={"effort": "low"})]
    kinds = [e.type for e in events]
    assert kinds[0] == "reasoning_delta" and "text_delta" in kinds and kinds[-1] == "completed"
    done = events[-1].response
    assert done.reasoning_text and done.timings.ttft_reasoning_ms <= done.timings.ttft_answer_ms


def test_a_guardrailed_converse_gives_boto3s_answer_shape(router, emulator):
    """guardrailConfig and guardContent as boto3 sends them; the emulator's guardrail blocks a
    word and masks an e-mail address, and the trace comes back as boto3 shows it."""
    import boto3
    from botocore.config import Config

    from laneway.testing import ACCESS_KEY_ID, SECRET_ACCESS_KEY

    direct = boto3.client(
        "bedrock-runtime", region_name="us-east-1", endpoint_url=emulator.url,
        aws_access_key_id=ACCESS_KEY_ID, aws_secret_access_key=SECRET_ACCESS_KEY,
        config=Config(retries={"max_attempts": 1}),
    )
    guard = {"guardrailIdentifier": "lanewaydemo1", "guardrailVersion": "1", "trace": "enabled"}
    for converse, model in ((direct.converse, "amazon.nova-lite-v1:0"), (router.converse_sync, "amazon.nova-lite-v1:0")):
        out = converse(modelId=model, guardrailConfig=guard, messages=[{"role": "user", "content": [{"text": "About the cactus"}]}])
        assert out["stopReason"] == "guardrail_intervened"
        assert out["output"]["message"]["content"][0]["text"] == "Sorry, I cannot talk about that."
        words = out["trace"]["guardrail"]["inputAssessment"]["lanewaydemo1"]["wordPolicy"]["customWords"]
        assert words[0]["match"] == "cactus" and words[0]["action"] == "BLOCKED"
        masked = converse(modelId=model, guardrailConfig=guard, messages=[{"role": "user", "content": [
            {"guardContent": {"text": {"text": "Echo: mail jane@example.com"}}}, {"text": "Echo: mail jane@example.com"}]}])
        assert masked["output"]["message"]["content"][0]["text"] == "mail {EMAIL}"
        assert masked["trace"]["guardrail"]["modelOutput"] == ["mail jane@example.com"]


async def test_a_call_that_cannot_get_a_slot_in_time_is_overloaded():
    # One slot on the one target these calls may use (Nova Micro's own id in us-east-1, which
    # answers in about 220 ms in the `startup` world, and is expected here, by the prior this
    # configuration gives it, to take a second): the calls beyond it would wait about a second
    # each in line (no hold time is known yet), past their 1.5 s deadline once served, so they
    # are refused at once (no wait in line), typed, saying the wait they needed.
    with Emulator(scenario="startup") as emu:
        config = '[models."amazon.nova-micro-v1:0"]\nquota = { max_concurrency = 1 }\nlatency = { tiers = { standard = { ttft = 1000 } } }\n'
        router = laneway.Router(config, **emu.router_kwargs())
        ask = lambda i: router.generate(
            f"Call {i}", model="amazon.nova-micro-v1:0", max_tokens=4, residency={"regions": ["us-east-1"]}, deadline_ms=1500
        )
        results = await asyncio.gather(*(ask(i) for i in range(4)), return_exceptions=True)
    answered = [r for r in results if isinstance(r, laneway.Response)]
    refused = [r for r in results if isinstance(r, laneway.OverloadedError)]
    assert len(answered) == 1 and len(refused) == 3, results
    e = refused[0]
    assert e.kind == "overloaded" and issubclass(laneway.OverloadedError, laneway.LanewayError)
    assert e.wait_needed_ms + 1000 >= e.wait_allowed_ms and e.waited_ms < 100
    assert "overloaded" in str(e) and f"{int(e.wait_needed_ms)} ms" in str(e)
