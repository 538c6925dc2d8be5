"""SageMaker endpoints served by moto, a third-party implementation of the AWS APIs whose
sagemaker-runtime, like a container without response streaming, serves only InvokeEndpoint
(InvokeEndpointWithResponseStream is a 404 page there).

With the defaults (`routing.stream_generate = true`, whole answers fetched as streams), the
first call to an endpoint finds that it does not stream and is answered whole; later calls are
sent whole at once; the decision says so. An endpoint configured `streams = false` is never
asked to stream.
"""

import json
import urllib.request

import pytest

import laneway

moto_server = pytest.importorskip("moto.server", reason="moto[server] is installed by scripts/test.sh")

CONFIG = """
[models."moto-tgi"]
provider = "sagemaker"
endpoints = [{ name = "tgi-endpoint", region = "us-east-1", format = "tgi" }]
price = { input_per_1k = 0.0002, output_per_1k = 0.0006 }

[models."moto-chat"]
provider = "sagemaker"
endpoints = [{ name = "chat-endpoint", region = "us-east-1", format = "openai_chat" }]
price = { input_per_1k = 0.0002, output_per_1k = 0.0006 }

[models."moto-chat-configured"]
provider = "sagemaker"
endpoints = [{ name = "chat-configured", region = "us-east-1", format = "openai_chat", streams = false }]
price = { input_per_1k = 0.0002, output_per_1k = 0.0006 }
"""


@pytest.fixture(scope="module")
def moto():
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def _queue(url, bodies):
    """Queues moto's answers to the next InvokeEndpoint calls (one each, in order)."""
    results = [{"Body": json.dumps(b), "ContentType": "application/json"} for b in bodies]
    req = urllib.request.Request(
        url + "/moto-api/static/sagemaker/endpoint-results",
        data=json.dumps({"region": "us-east-1", "results": results}).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )
    urllib.request.urlopen(req, timeout=10).read()


def _tgi(text):
    return [{"generated_text": text, "details": {"finish_reason": "eos_token", "generated_tokens": len(text.split())}}]


def _chat(text):
    return {
        "id": "chatcmpl-moto", "object": "chat.completion", "model": "moto",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": len(text.split()), "total_tokens": 5 + len(text.split())},
    }


def _sent_whole(answer):
    return [r["why"] for r in answer.decision.reasons if r.get("reason") == "sent_whole"]


@pytest.mark.parametrize("model, shape, first_why", [
    ("moto-tgi", _tgi, "refused"),
    ("moto-chat", _chat, "refused"),
    ("moto-chat-configured", _chat, "configured"),
])
def test_endpoints_that_do_not_stream_answer_with_the_defaults(moto, model, shape, first_why):
    router = laneway.Router(CONFIG, endpoint_url=moto, access_key_id="testing", secret_access_key="testing")
    texts = [f"answer number {i} from moto" for i in range(5)]
    _queue(moto, [shape(t) for t in texts])
    for i, text in enumerate(texts):
        answer = router.generate_sync(f"Question {i} for {model}", model=model, max_tokens=16)
        assert answer.text == text
        assert answer.decision.provider == "sagemaker" and answer.decision.endpoint is not None
        assert answer.decision.failed_attempts == []
        assert _sent_whole(answer) == [first_why], answer.decision.reasons
    # A stream of such an endpoint delivers the whole answer in one piece, then completes.
    _queue(moto, [shape("streamed whole")])
    deltas, done = [], None
    for event in router.stream_sync("One more", model=model, max_tokens=16):
        if event.type == "text_delta":
            deltas.append(event.text)
        elif event.type == "completed":
            done = event.response
    assert "".join(deltas) == "streamed whole" and done is not None and done.text == "streamed whole"
