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
    """Every target of both models the tests name throttles: a storm Laneway cannot route
    around, which each framework must raise as its own error (with its own retries off, and
    a short deadline through `laneway.options`)."""
    with Emulator(scenario="fast") as emu:
        for model in (LITE, SONNET):
            emu.add_fault({"kind": "throttle", "model": model})
        yield laneway.Router(**emu.router_kwargs())


def storm():
    return laneway.options(slo={"deadline": 1500})


def weather(city: str) -> str:
    """Weather for a city."""
    return f"21 degrees in {city}"


# --- Strands Agents: a boto3 Session (`boto_session=`), streaming on by default ---------------

def test_strands_streams_and_calls_tools(router):
    from pydantic import BaseModel
    from strands import Agent, tool
    from strands.models import BedrockModel

    model = BedrockModel(model_id=LITE, boto_session=laneway.boto3.session(router, region_name="us-east-1"), max_tokens=4000)
    # Strands streams by default, on a thread of its own: its call's decision is seen inside
    # the `options` scope it was made in.
    with laneway.options():
        result = Agent(model=model, callback_handler=None)("Say hello.")
        assert laneway.last_decision()["model"] == LITE
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
    with storm():
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
    assert laneway.last_decision()["model"] == LITE

    from pydantic import BaseModel

    class City(BaseModel):
        city: str

    out = ChatBedrockConverse(model=SONNET, client=laneway.boto3.client(router), region_name="us-east-1").with_structured_output(City).invoke("Capital of France?")
    assert isinstance(out, City) and out.city


def test_langchain_raises_the_sdks_throttle_errors(throttled_router):
    import openai
    from botocore.exceptions import ClientError
    from langchain_aws import ChatBedrockConverse
    from langchain_openai import ChatOpenAI

    bedrock = ChatBedrockConverse(model=LITE, client=laneway.boto3.client(throttled_router), region_name="us-east-1")
    chat = ChatOpenAI(model=LITE, api_key="unused", base_url="http://laneway.invalid/v1", max_retries=0,
                      http_client=laneway.openai.client(throttled_router)._client)
    with storm():
        with pytest.raises(ClientError) as e:
            bedrock.invoke("x")
        assert e.value.response["Error"]["Code"] == "ThrottlingException"
        with pytest.raises(openai.RateLimitError):
            chat.invoke("x")


def test_langchain_chat_openai_on_the_transport(router):
    from langchain_openai import ChatOpenAI

    client = laneway.openai.client(router)
    llm = ChatOpenAI(model=LITE, api_key="unused", base_url="http://laneway.invalid/v1", max_retries=0,
                     http_client=client._client, max_completion_tokens=100)
    assert llm.invoke("Say hello.").content
    assert laneway.last_decision()["model"] == LITE
    assert len(list(llm.stream("Tell me a story."))) > 5
    msg = llm.bind_tools([weather], tool_choice="weather").invoke("Weather in Paris?")
    assert msg.tool_calls and msg.tool_calls[0]["name"] == "weather"

    from pydantic import BaseModel

    class City(BaseModel):
        city: str

    out = ChatOpenAI(model=SONNET, api_key="unused", base_url="http://laneway.invalid/v1", max_retries=0,
                     http_client=client._client).with_structured_output(City).invoke("Capital of France?")
    assert isinstance(out, City) and out.city


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

    # (The structured output above is pydantic-ai's output tool, called by the model.)
    async def streamed():
        async with Agent(bedrock).run_stream("Tell me a long story.") as run:
            return [t async for t in run.stream_text(delta=True, debounce_by=None)]

    # pydantic-ai runs its calls on tasks and threads of its own: their decisions are seen
    # through the `options` scope they were made in.
    with laneway.options():
        assert Agent(bedrock).run_sync("Say hello.").output
        whole = laneway.last_decision()
        assert len(asyncio.run(streamed())) > 5
        stream = laneway.last_decision()
    assert whole["model"] == stream["model"] == LITE and stream["call_id"] != whole["call_id"]
    assert laneway.last_decision()["model"] == LITE


def test_pydantic_ai_raises_its_http_error_for_a_throttle_storm(throttled_router):
    from pydantic_ai import Agent
    from pydantic_ai.exceptions import ModelHTTPError
    from pydantic_ai.models.bedrock import BedrockConverseModel
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.bedrock import BedrockProvider
    from pydantic_ai.providers.openai import OpenAIProvider

    bedrock = BedrockConverseModel(LITE, provider=BedrockProvider(bedrock_client=laneway.boto3.client(throttled_router)))
    openai_model = OpenAIChatModel(LITE, provider=OpenAIProvider(openai_client=laneway.openai.async_client(throttled_router)))
    with storm():
        for model in (bedrock, openai_model):
            with pytest.raises(ModelHTTPError) as e:
                Agent(model).run_sync("x")
            assert e.value.status_code == 429


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
    assert laneway.last_decision()["model"].startswith("anthropic.claude")


def test_instructor_raises_the_sdks_throttle_errors(throttled_router):
    import instructor
    import openai
    from pydantic import BaseModel

    class Rating(BaseModel):
        score: int

    bedrock = instructor.from_bedrock(laneway.boto3.client(throttled_router))
    oa = instructor.from_openai(laneway.openai.client(throttled_router))
    ask = [{"role": "user", "content": "Rate it."}]
    from botocore.exceptions import ClientError
    from instructor.core.exceptions import InstructorRetryException

    # instructor's own exception, once its retries (none here) are spent, with the SDK's
    # error as its cause.
    with storm():
        with pytest.raises(InstructorRetryException) as e:
            bedrock.chat.completions.create(modelId=SONNET, messages=ask, response_model=Rating, max_retries=0)
        cause = e.value.__cause__
        assert isinstance(cause, ClientError) and cause.response["Error"]["Code"] == "ThrottlingException"
        with pytest.raises(InstructorRetryException) as e:
            oa.chat.completions.create(model=SONNET, messages=ask, response_model=Rating, max_retries=0)
        assert isinstance(e.value.__cause__, openai.RateLimitError)


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

    # A tool loop: the first turn must call the tool; its result goes back; the next answers.
    from agents import ModelSettings

    called = []

    @function_tool
    def lookup_city(city: str) -> str:
        """Weather for a city."""
        called.append(city)
        return weather(city)

    looping = Agent(name="c", instructions="Use the tool.", model=OpenAIResponsesModel(SONNET, openai_client=client),
                    tools=[lookup_city], model_settings=ModelSettings(tool_choice="required"))
    result = Runner.run_sync(looping, "Weather in Paris?", max_turns=4)
    assert called and result.final_output


def test_openai_agents_sdk_raises_the_sdks_rate_limit_error(throttled_router):
    import openai
    from agents import Agent, OpenAIResponsesModel, Runner, set_tracing_disabled

    set_tracing_disabled(True)
    agent = Agent(name="a", model=OpenAIResponsesModel(LITE, openai_client=laneway.openai.async_client(throttled_router)))
    with storm():
        with pytest.raises(openai.RateLimitError):
            Runner.run_sync(agent, "x")
