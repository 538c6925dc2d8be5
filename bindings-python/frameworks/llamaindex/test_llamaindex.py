"""LlamaIndex, unmodified, on Laneway: BedrockConverse on a botocore session from
`laneway.boto3` (sync) and an aiobotocore client from `laneway.boto3.aio_client` (async), and
its OpenAI LLM, which checks model names as OpenAI's, on `laneway.httpx` with the name read
through an `[aliases]` entry. Run in its own virtual environment (requirements.txt beside this
file: `openai<3` and aioboto3's botocore pin); the emulator stands for AWS."""

import httpx
import pytest
from botocore.config import Config
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.prompts import PromptTemplate
from llama_index.core.tools import FunctionTool
from llama_index.llms.bedrock_converse import BedrockConverse
from llama_index.llms.openai import OpenAI
from pydantic import BaseModel

import laneway
import laneway.boto3
import laneway.httpx
from laneway.testing import ACCESS_KEY_ID, SECRET_ACCESS_KEY, Emulator

LITE = "amazon.nova-lite-v1:0"
KEYS = dict(aws_access_key_id=ACCESS_KEY_ID, aws_secret_access_key=SECRET_ACCESS_KEY)
STORY = [ChatMessage(role="user", content="Tell me a long story about the sea.")]
# LlamaIndex retries ten times by default, on top of botocore's: one attempt each, Laneway
# retried already.
ONCE = dict(max_retries=1, botocore_config=Config(retries={"total_max_attempts": 1}))


@pytest.fixture(scope="module")
def emulator():
    with Emulator(scenario="fast") as emu:
        yield emu


@pytest.fixture
def router(emulator):
    return laneway.Router(**emulator.router_kwargs(), config={"aliases": {"gpt-4o-mini": {"model": LITE}}})


def weather(city: str) -> str:
    """Weather for a city."""
    return f"21 degrees in {city}"


class City(BaseModel):
    name: str
    country: str


def bedrock(router, **extra):
    return BedrockConverse(model=LITE, region_name="us-east-1", botocore_session=laneway.boto3.botocore_session(router), max_tokens=400, **KEYS, **ONCE, **extra)


def test_bedrock_converse_chats_streams_and_reports_the_decision(router):
    llm = bedrock(router)
    answer = llm.chat(STORY)
    assert answer.message.content and laneway.last_decision()["model"] == LITE
    pieces = [r.delta for r in llm.stream_chat(STORY)]
    assert len(pieces) >= 20 and len("".join(pieces)) > 100
    assert llm.complete("Say hello.").text


def test_bedrock_converse_calls_tools_and_gives_structured_output(router):
    llm = bedrock(router)
    tool = FunctionTool.from_defaults(fn=weather)
    response = llm.chat_with_tools([tool], user_msg="Weather in Paris?", tool_required=True)
    (call,) = llm.get_tool_calls_from_response(response, error_on_no_tool_call=True)
    assert call.tool_name == "weather" and "city" in call.tool_kwargs
    city = llm.structured_predict(City, PromptTemplate("Name a city: {hint}"), hint="France")
    assert isinstance(city, City)


async def test_bedrock_converse_async_on_an_aiobotocore_client(router):
    async with laneway.boto3.aio_client(router, **KEYS) as client:
        llm = BedrockConverse(model=LITE, region_name="us-east-1", async_client=client, max_tokens=400, **KEYS, max_retries=1)
        answer = await llm.achat(STORY)
        assert answer.message.content
        pieces = [r.delta async for r in await llm.astream_chat(STORY)]
        assert len(pieces) >= 20 and "".join(pieces)


def test_a_throttle_storm_is_llamaindexs_error_without_its_retries():
    with Emulator(scenario="fast") as emu:
        emu.add_fault({"kind": "throttle", "model": LITE})
        router = laneway.Router(**emu.router_kwargs())
        llm = bedrock(router)
        with laneway.options(slo={"deadline": 2000}):
            with pytest.raises(llm._client.exceptions.ThrottlingException) as e:
                llm.chat([ChatMessage(role="user", content="x")])
        meta = e.value.response["ResponseMetadata"]
        assert meta["HTTPStatusCode"] == 429 and meta["RetryAttempts"] == 0


async def test_an_aiobotocore_client_raises_the_throttle_without_retrying_it():
    """`aio_client` builds its clients with one attempt: aiobotocore cannot be told per
    answer not to retry, and Laneway retried already."""
    with Emulator(scenario="fast") as emu:
        emu.add_fault({"kind": "throttle", "model": LITE})
        router = laneway.Router(**emu.router_kwargs())
        async with laneway.boto3.aio_client(router, **KEYS) as client:
            with laneway.options(slo={"deadline": 1500}):
                with pytest.raises(client.exceptions.ThrottlingException) as e:
                    await client.converse(modelId=LITE, messages=[{"role": "user", "content": [{"text": "x"}]}])
        meta = e.value.response["ResponseMetadata"]
        assert meta["HTTPStatusCode"] == 429 and meta["RetryAttempts"] == 0


def test_openai_with_a_name_it_knows_through_an_alias(router):
    client = httpx.Client(transport=laneway.httpx.Transport(router, module=httpx))
    llm = OpenAI(model="gpt-4o-mini", api_key="in-process", api_base="http://laneway.invalid/v1", http_client=client, max_retries=0, max_tokens=300)
    answer = llm.chat(STORY)
    assert answer.message.content
    decision = laneway.last_decision()
    assert decision["model"] == LITE
    pieces = [r.delta for r in llm.stream_chat(STORY)]
    assert len(pieces) >= 20
    tool = FunctionTool.from_defaults(fn=weather)
    response = llm.chat_with_tools([tool], user_msg="Weather in Paris?", tool_required=True)
    (call,) = llm.get_tool_calls_from_response(response, error_on_no_tool_call=True)
    assert call.tool_name == "weather"
