"""Laneway under an unmodified boto3 client, at botocore's own seam: Converse, ConverseStream,
InvokeModel and InvokeModelWithResponseStream answered in process (botocore parses the same bytes AWS would send), botocore's
exceptions for Laneway's errors, no botocore retries on top of Laneway's, Laneway's options
through `laneway.options`, and every other operation sent where it was going."""

import json

import boto3
import botocore
import pytest
from botocore.config import Config

import laneway
import laneway.boto3
from laneway.testing import ACCESS_KEY_ID, SECRET_ACCESS_KEY, Emulator

LITE = "amazon.nova-lite-v1:0"
TOOLS = {"tools": [{"toolSpec": {"name": "weather", "description": "Weather for a city", "inputSchema": {"json": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}}]}


def test_a_whole_converse_is_parsed_by_botocore(router):
    client = laneway.boto3.client(router, aws_access_key_id=ACCESS_KEY_ID, aws_secret_access_key=SECRET_ACCESS_KEY)
    out = client.converse(
        modelId=LITE,
        system=[{"text": "Be brief."}],
        messages=[{"role": "user", "content": [{"text": "Say hello."}]}],
        inferenceConfig={"maxTokens": 64},
    )
    assert out["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert out["output"]["message"]["role"] == "assistant"
    assert out["output"]["message"]["content"][0]["text"]
    assert out["stopReason"] in ("end_turn", "max_tokens")
    usage = out["usage"]
    assert usage["totalTokens"] >= usage["inputTokens"] + usage["outputTokens"] > 0
    assert router.metrics()["lanes"], "the call went through Laneway"


def _streamed(client, **ask):
    names, text, stop, meta = [], [], None, None
    for event in client.converse_stream(**ask)["stream"]:
        (name, body), = event.items()
        names.append(name)
        if name == "contentBlockDelta":
            text.append(body["delta"]["text"])
        elif name == "messageStop":
            stop = body["stopReason"]
        elif name == "metadata":
            meta = body
    return names, "".join(text), stop, meta


def test_a_long_converse_stream_arrives_as_botocores_events(monkeypatch, tmp_path):
    """The same stream as botocore reads it from the service itself (the emulator, which
    answers a prompt the same way each time): the same events, the same text."""
    # No credentials anywhere botocore looks: Laneway's answers need none, and are unsigned.
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                 "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with Emulator(scenario="fast") as emu:
        router = laneway.Router(**emu.router_kwargs())
        client = laneway.boto3.client(router)
        assert client._request_signer._credentials is None
        direct = boto3.client("bedrock-runtime", region_name="us-east-1", endpoint_url=emu.url, aws_access_key_id=ACCESS_KEY_ID, aws_secret_access_key=SECRET_ACCESS_KEY)
        ask = dict(modelId=LITE, messages=[{"role": "user", "content": [{"text": "Tell me a long story about the sea."}]}], inferenceConfig={"maxTokens": 2000})
        names, text, stop, meta = _streamed(client, **ask)
        names_direct, text_direct, stop_direct, _ = _streamed(direct, **ask)
        assert names[0] == "messageStart" and names[-3:] == ["contentBlockStop", "messageStop", "metadata"]
        assert names == names_direct and text == text_direct and stop == stop_direct
        assert names.count("contentBlockDelta") >= 40 and len(text) > 150
        assert meta["usage"]["outputTokens"] > 0 and meta["metrics"]["latencyMs"] >= 0


def test_a_tool_call_streams_its_input_in_pieces(router):
    client = laneway.boto3.client(router)
    out = client.converse_stream(
        modelId=LITE,
        messages=[{"role": "user", "content": [{"text": "Weather in Paris?"}]}],
        toolConfig=dict(TOOLS, toolChoice={"tool": {"name": "weather"}}),
        inferenceConfig={"maxTokens": 200},
    )
    start, pieces, stop = None, [], None
    for event in out["stream"]:
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]["start"]["toolUse"]
        elif "contentBlockDelta" in event and "toolUse" in event["contentBlockDelta"]["delta"]:
            pieces.append(event["contentBlockDelta"]["delta"]["toolUse"]["input"])
        elif "messageStop" in event:
            stop = event["messageStop"]["stopReason"]
    assert start["name"] == "weather" and start["toolUseId"]
    assert "city" in json.loads("".join(pieces))
    assert stop == "tool_use"
    whole = client.converse(
        modelId=LITE,
        messages=[{"role": "user", "content": [{"text": "Weather in Paris?"}]}],
        toolConfig=dict(TOOLS, toolChoice={"tool": {"name": "weather"}}),
        inferenceConfig={"maxTokens": 200},
    )
    use = whole["output"]["message"]["content"][-1]["toolUse"]
    assert use["name"] == "weather" and "city" in use["input"]


def test_a_throttle_storm_is_botocores_throttling_exception_without_its_retries():
    """Every target throttling: Laneway waits for one to serve within the call's deadline (a
    short one here, through `laneway.options`), then botocore raises its own exception, with
    no retry of its own on top."""
    with Emulator(scenario="fast") as emu:
        emu.add_fault({"kind": "throttle", "model": LITE})
        router = laneway.Router(**emu.router_kwargs())
        client = laneway.boto3.client(router)
        ask = dict(modelId=LITE, messages=[{"role": "user", "content": [{"text": "x"}]}])
        with laneway.options(slo={"deadline": 2000}):
            with pytest.raises(client.exceptions.ThrottlingException) as e:
                client.converse(**ask)
            meta = e.value.response["ResponseMetadata"]
            assert meta["HTTPStatusCode"] == 429 and meta["RetryAttempts"] == 0
            assert e.value.response["Error"]["Code"] == "ThrottlingException"
            with pytest.raises(client.exceptions.ThrottlingException):
                for _ in client.converse_stream(**ask)["stream"]:
                    pass


def test_bad_input_is_the_services_validation_error_naming_the_field(router):
    client = laneway.boto3.client(router)
    with pytest.raises(client.exceptions.ValidationException) as e:
        client.converse(
            modelId=LITE,
            messages=[{"role": "user", "content": [{"document": {"format": "txt", "name": "notes.txt", "source": {"bytes": b"x"}}}]}],
        )
    assert "messages[0].content[0].document.name" in str(e.value)
    with pytest.raises(client.exceptions.ValidationException) as e:
        with laneway.options(slo={"class": "no-such-class"}):
            client.converse(modelId=LITE, messages=[{"role": "user", "content": [{"text": "x"}]}])
    assert "class" in str(e.value)


def test_options_reach_a_call_made_by_code_that_knows_nothing_of_them(router):
    client = laneway.boto3.client(router)
    ask = dict(modelId=LITE, messages=[{"role": "user", "content": [{"text": "Hi"}]}], inferenceConfig={"maxTokens": 8})
    with laneway.options(task_id="ticket-7"):
        with laneway.options(slo={"class": "interactive"}):
            out = client.converse(**ask)
    finished = router.finish_task("ticket-7", True)
    assert finished, "the call was counted under the task the context named"
    # What Laneway decided, beside botocore's parsed answer.
    decision = laneway.last_decision()
    assert decision["model"] == LITE and decision["cost_usd"] > 0 and decision["attempts_sent"] >= 1
    assert out["ResponseMetadata"]["HTTPHeaders"]["x-laneway-region"] == decision["region"]
    # A stream's, once read to its end: another call, another id.
    for _ in client.converse_stream(**ask)["stream"]:
        pass
    streamed = laneway.last_decision()
    assert streamed["model"] == LITE and streamed["call_id"] != decision["call_id"]


def test_a_session_and_a_botocore_session_route_the_clients_frameworks_build(router, emulator):
    s = laneway.boto3.session(router, region_name="eu-west-1")
    out = s.client("bedrock-runtime").converse(modelId=LITE, messages=[{"role": "user", "content": [{"text": "Hi"}]}], inferenceConfig={"maxTokens": 8})
    assert out["output"]["message"]["content"][0]["text"]
    core = laneway.boto3.botocore_session(router)
    c = core.create_client("bedrock-runtime", region_name="us-west-2")
    assert c.converse(modelId=LITE, messages=[{"role": "user", "content": [{"text": "Hi"}]}], inferenceConfig={"maxTokens": 8})["stopReason"]
    # A client built elsewhere, installed afterwards.
    plain = boto3.client("bedrock-runtime", region_name="us-east-1", aws_access_key_id=ACCESS_KEY_ID, aws_secret_access_key=SECRET_ACCESS_KEY)
    laneway.boto3.install(router, plain)
    assert plain.converse(modelId=LITE, messages=[{"role": "user", "content": [{"text": "Hi"}]}], inferenceConfig={"maxTokens": 8})["stopReason"]
    with pytest.raises(TypeError):
        laneway.boto3.install(router, object())


def test_what_laneway_does_not_answer_goes_where_it_was_going(router, emulator, caplog):
    """Another operation of the same client reaches the endpoint it names (here the emulator),
    signed as botocore signs it."""
    caplog.set_level("INFO", logger="laneway")
    client = laneway.boto3.client(
        router, endpoint_url=emulator.url, aws_access_key_id=ACCESS_KEY_ID, aws_secret_access_key=SECRET_ACCESS_KEY,
        config=Config(retries={"max_attempts": 1}),
    )
    def invoked():
        return sum(c["requests"] for c in emulator.counters() if c["operation"] == "InvokeModel")

    before = invoked()
    # A model the router's configuration does not route goes to the service as it was.
    direct = client.invoke_model(
        modelId="us.meta.llama3-3-70b-instruct-v1:0",
        body=json.dumps({"messages": [{"role": "user", "content": [{"text": "Hi"}]}], "inferenceConfig": {"maxTokens": 8}}),
    )
    assert direct["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert "x-laneway-answered" not in direct["ResponseMetadata"]["HTTPHeaders"]
    assert invoked() == before + 1
    told = [r.getMessage() for r in caplog.records if r.name == "laneway"]
    assert any("meta.llama3-3-70b-instruct-v1" in m and "sent to AWS" in m for m in told), told


HAIKU = "us.anthropic.claude-haiku-4-5-20251001-v1:0"


def _chunks(out):
    events = []
    for event in out["body"]:
        (name, body), = event.items()
        assert name == "chunk", event
        events.append(json.loads(body["bytes"]))
    return events


def test_invoke_model_answers_claudes_messages_body_whole_and_streamed(router):
    client = laneway.boto3.client(router)
    ask = {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 400,
        "system": [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": "Tell me a long story about the sea."}],
    }
    out = client.invoke_model(modelId=HAIKU, body=json.dumps(ask))
    assert out["contentType"] == "application/json"
    headers = out["ResponseMetadata"]["HTTPHeaders"]
    message = json.loads(out["body"].read())
    assert message["type"] == "message" and message["role"] == "assistant"
    assert message["content"][0]["type"] == "text" and message["content"][0]["text"]
    assert message["stop_reason"] in ("end_turn", "max_tokens")
    assert int(headers["x-amzn-bedrock-output-token-count"]) == message["usage"]["output_tokens"] > 0
    assert headers["x-laneway-model"].startswith("anthropic.claude")

    events = _chunks(client.invoke_model_with_response_stream(modelId=HAIKU, body=json.dumps(ask)))
    kinds = [e["type"] for e in events]
    assert kinds[:2] == ["message_start", "content_block_start"]
    assert kinds[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    text = "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta")
    assert kinds.count("content_block_delta") >= 20 and len(text) > 100
    assert events[-2]["usage"]["output_tokens"] > 0
    assert events[-1]["amazon-bedrock-invocationMetrics"]["outputTokenCount"] == events[-2]["usage"]["output_tokens"]


def test_invoke_model_streams_a_claude_tool_call_as_input_json_deltas(router):
    client = laneway.boto3.client(router)
    ask = {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 200,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]}],
        "tools": [{"name": "weather", "description": "Weather for a city", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}],
        "tool_choice": {"type": "tool", "name": "weather"},
    }
    events = _chunks(client.invoke_model_with_response_stream(modelId=HAIKU, body=json.dumps(ask)))
    starts = [e for e in events if e["type"] == "content_block_start"]
    tool = [s for s in starts if s["content_block"]["type"] == "tool_use"]
    assert len(tool) == 1 and tool[0]["content_block"]["name"] == "weather"
    # Blocks are numbered from 0 in the order they start, as the Messages API numbers them.
    assert [s["index"] for s in starts] == list(range(len(starts)))
    pieces = "".join(e["delta"]["partial_json"] for e in events if e.get("delta", {}).get("type") == "input_json_delta")
    assert "city" in json.loads(pieces)
    assert [e for e in events if e["type"] == "message_delta"][0]["delta"]["stop_reason"] == "tool_use"


def test_invoke_model_answers_novas_body_as_the_same_converse_would(router, emulator):
    """Laneway reads a Nova body as the Converse request it means: the answer is the one the
    service itself gives that Converse request (the emulator answers a prompt the same way each
    time), in Nova's own shape, whole and streamed."""
    client = laneway.boto3.client(router)
    direct = boto3.client("bedrock-runtime", region_name="us-east-1", endpoint_url=emulator.url, aws_access_key_id=ACCESS_KEY_ID, aws_secret_access_key=SECRET_ACCESS_KEY)
    messages = [{"role": "user", "content": [{"text": "Tell me a long story about the sea."}]}]
    ask = json.dumps({
        "schemaVersion": "messages-v1",
        "system": [{"text": "Be brief."}],
        "messages": messages,
        "inferenceConfig": {"max_new_tokens": 300},
    })
    same = dict(modelId=LITE, system=[{"text": "Be brief."}], messages=messages, inferenceConfig={"maxTokens": 300})
    ours = json.loads(client.invoke_model(modelId=LITE, body=ask)["body"].read())
    theirs = direct.converse(**same)
    assert ours["output"] == theirs["output"] and ours["stopReason"] == theirs["stopReason"]
    assert ours["usage"]["outputTokens"] == theirs["usage"]["outputTokens"] > 0
    assert set(ours["usage"]) >= {"inputTokens", "outputTokens", "totalTokens", "cacheReadInputTokenCount"}

    ours = _chunks(client.invoke_model_with_response_stream(modelId=LITE, body=ask))
    text = "".join(e["contentBlockDelta"]["delta"].get("text", "") for e in ours if "contentBlockDelta" in e)
    _, text_direct, _, _ = _streamed(direct, **same)
    assert text == text_direct and len(text) > 100
    assert next(iter(ours[0])) == "messageStart"
    assert "metadata" in ours[-1] and ours[-1]["amazon-bedrock-invocationMetrics"]["outputTokenCount"] > 0


def test_invoke_model_refuses_what_it_cannot_read_by_name(router):
    client = laneway.boto3.client(router)
    bad = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 10, "messages": [{"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": "https://x"}}]}]}
    with pytest.raises(client.exceptions.ValidationException) as e:
        client.invoke_model(modelId=HAIKU, body=json.dumps(bad))
    assert "messages[0].content[0].source.type" in str(e.value)
    with pytest.raises(client.exceptions.ValidationException) as e:
        client.invoke_model(modelId=HAIKU, body=b"{not json")
    assert "not JSON" in str(e.value)
