"""Agent frameworks, unmodified, on Laneway through the official clients' seams: each gets a
client or session from `laneway.boto3`, `laneway.openai` or `laneway.httpx` and nothing else
changes. Run in their own virtual environment (scripts/test.sh installs the pinned versions in
frameworks/requirements.txt); the emulator stands for AWS."""

import asyncio
import json

import pytest

import laneway
import laneway.boto3
import laneway.httpx
import laneway.openai
from laneway.testing import Emulator

LITE = "amazon.nova-lite-v1:0"
SONNET = "anthropic.claude-sonnet-4-5-20250929-v1:0"


@pytest.fixture(scope="module")
def emulator():
    with Emulator(scenario="fast") as emu:
        yield emu


@pytest.fixture
def router(emulator):
    return laneway.Router(**emulator.router_kwargs())


@pytest.fixture
def throttled_router():
    with Emulator(scenario="fast") as emu:
        emu.add_fault({"kind": "throttle", "model": LITE})
        yield laneway.Router(**emu.router_kwargs())


def weather(city: str) -> str:
    """Weather for a city."""
    return f"21 degrees in {city}"


# --- Strands Agents: a boto3 Session (`boto_session=`), streaming on by default ---------------

def test_strands_streams_and_calls_tools(router):
    from pydantic import BaseModel
    from strands import Agent, tool
    from strands.models import BedrockModel

    model = BedrockModel(model_id=LITE, boto_session=laneway.boto3.session(router, region_name="us-east-1"), max_tokens=4000)
    result = Agent(model=model, callback_handler=None)("Say hello.")
    assert str(result).strip()
    assert result.metrics.accumulated_usage["outputTokens"] > 0

    called = []

    @tool
    def lookup(city: str) -> str:
        """Weather for a city."""
        called.append(city)
        return weather(city)

    # Structured output is a forced tool call (toolChoice), which the emulator answers with one.
    class City(BaseModel):
        city: str

    agent = Agent(model=BedrockModel(model_id=SONNET, boto_session=laneway.boto3.session(router, region_name="us-east-1"), max_tokens=4000),
                  tools=[lookup], callback_handler=None)
    out = agent.structured_output(City, "Which city is the capital of France?")
    assert isinstance(out, City) and out.city
    # A tool the agent calls itself, its result sent back to the model through the seam.
    agent.tool.lookup(city="Paris")
    assert called == ["Paris"]
    assert str(agent("And what should I wear there?")).strip()


def test_strands_raises_its_throttle_error(throttled_router):
    from strands import Agent
    from strands.models import BedrockModel
    from strands.types.exceptions import ModelThrottledException

    model = BedrockModel(model_id=LITE, boto_session=laneway.boto3.session(throttled_router, region_name="us-east-1"))
    # Strands' own retries (six attempts, backing off from 4 s) off: Laneway retried within
    # the call's deadline already.
    with laneway.options(slo={"deadline": 1500}):
        with pytest.raises(ModelThrottledException):
            Agent(model=model, callback_handler=None, retry_strategy=None)("x")


# --- LangChain: ChatBedrockConverse (client=), ChatOpenAI (http_client=) ----------------------

def test_langchain_bedrock_converse_invokes_streams_and_binds_tools(router):
    from langchain_aws import ChatBedrockConverse

    llm = ChatBedrockConverse(model=LITE, client=laneway.boto3.client(router), region_name="us-east-1", max_tokens=4000)
    assert llm.invoke("Say hello.").content
    chunks = list(llm.stream("Tell me a story."))
    assert len(chunks) > 10 and "".join(c.text() if callable(getattr(c, "text", None)) else str(c.content) for c in chunks)
    tool_llm = llm.bind_tools([weather], tool_choice="weather")
    msg = tool_llm.invoke("Weather in Paris?")
    assert msg.tool_calls and msg.tool_calls[0]["name"] == "weather" and "city" in msg.tool_calls[0]["args"]


def test_langchain_chat_openai_on_the_transport(router):
    from langchain_openai import ChatOpenAI

    client = laneway.openai.client(router)
    llm = ChatOpenAI(model=LITE, api_key="unused", base_url="http://laneway.invalid/v1", max_retries=0,
                     http_client=client._client, max_completion_tokens=100)
    assert llm.invoke("Say hello.").content
    assert len(list(llm.stream("Tell me a story."))) > 5


# --- pydantic-ai: BedrockProvider(bedrock_client=), OpenAIProvider(openai_client=) -----------

def test_pydantic_ai_on_bedrock_and_openai_providers(router):
    from pydantic import BaseModel
    from pydantic_ai import Agent
    from pydantic_ai.models.bedrock import BedrockConverseModel
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.bedrock import BedrockProvider
    from pydantic_ai.providers.openai import OpenAIProvider

    bedrock = BedrockConverseModel(LITE, provider=BedrockProvider(bedrock_client=laneway.boto3.client(router)))
    assert Agent(bedrock).run_sync("Say hello.").output

    class City(BaseModel):
        city: str

    openai_model = OpenAIChatModel(SONNET, provider=OpenAIProvider(openai_client=laneway.openai.async_client(router)))
    out = Agent(openai_model, output_type=City).run_sync("Which city is the capital of France?").output
    assert isinstance(out, City) and out.city


# --- instructor: from_bedrock (a real botocore client), from_openai (a real OpenAI) ----------

def test_instructor_on_both_clients(router):
    import instructor
    from pydantic import BaseModel

    class Rating(BaseModel):
        answer: str
        score: int

    bedrock = instructor.from_bedrock(laneway.boto3.client(router))
    r = bedrock.chat.completions.create(modelId=SONNET, messages=[{"role": "user", "content": "Rate it."}], response_model=Rating)
    assert isinstance(r, Rating)
    oa = instructor.from_openai(laneway.openai.client(router))
    r = oa.chat.completions.create(model=SONNET, messages=[{"role": "user", "content": "Rate it."}], response_model=Rating)
    assert isinstance(r, Rating)


# --- OpenAI Agents SDK: Responses by default, on a real AsyncOpenAI ---------------------------

def test_openai_agents_sdk_runs_on_responses_and_chat_completions(router):
    from agents import Agent, OpenAIChatCompletionsModel, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled

    set_tracing_disabled(True)
    client = laneway.openai.async_client(router)

    @function_tool
    def lookup(city: str) -> str:
        """Weather for a city."""
        return weather(city)

    responses = Agent(name="a", instructions="Be brief.", model=OpenAIResponsesModel(SONNET, openai_client=client), tools=[lookup])
    assert Runner.run_sync(responses, "Say hello.").final_output
    chat = Agent(name="b", instructions="Be brief.", model=OpenAIChatCompletionsModel(LITE, openai_client=client))
    assert Runner.run_sync(chat, "Say hello.").final_output

    async def streamed():
        run = Runner.run_streamed(responses, "Tell me a story.")
        return [e async for e in run.stream_events()]

    assert len(asyncio.run(streamed())) > 5
