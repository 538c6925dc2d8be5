"""Laneway's `openai`-shaped Python client (`laneway.openai.OpenAI`) against the official `openai`
SDK calling the emulator's OpenAI-compatible endpoint directly (`base_url` at `/openai/v1`), the
same model and body, in the same run (each side reads what an app reads: the text of each chunk
or text-delta event): `bench/bindings/run.sh` (or run this file with a venv
holding laneway and openai).

The client process is pinned to CPU 0 and the emulator (release build) to CPU 1, so client CPU
per call is what each costs one core. Both send the same Chat Completions or Responses body to
the same GPT model; Laneway still plans (tier, targets, state), signs, measures and writes the
SDK's shapes. Sequential: one call at a time; concurrent: 64 in flight (asyncio, `AsyncOpenAI`
on both sides). Streams are read to their end.
"""

import asyncio
import os
import subprocess
import sys
import time

import openai as sdk

import laneway
from laneway.openai import AsyncOpenAI, OpenAI
from laneway.testing import Emulator

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = "openai.gpt-5.6-terra"
# bedrock-runtime serves it by profiles; Laneway picks the global one (the cheapest), and the
# SDK is given the same.
SDK_MODEL = "global.openai.gpt-5.6-terra"
PROMPT = "Summarise ticket {i}: the invoice was charged twice and the customer wants a refund."
ROUNDS = int(os.environ.get("LANEWAY_BENCH_ROUNDS", "3"))
TOKENS = [int(t) for t in os.environ.get("LANEWAY_BENCH_TOKENS", "16,64,512").split(",")]
CALLS_PER_ROW = int(os.environ.get("LANEWAY_BENCH_CALLS", "3200"))
WARMUP = int(os.environ.get("LANEWAY_BENCH_WARMUP", "500"))
# Whole answers fetched whole, as the SDK fetches them.
CONFIG = {"routing": {"stream_generate": False}}


def body(api: str, i: int, tokens: int, stream: bool, model: str):
    if api == "chat":
        b = {"model": model, "messages": [{"role": "user", "content": PROMPT.format(i=i)}], "max_completion_tokens": tokens}
    else:
        b = {"model": model, "input": PROMPT.format(i=i), "max_output_tokens": tokens}
    if stream:
        b["stream"] = True
    return b


def read_event(api: str, ev) -> int:
    """What an app reads of each event: a chunk's text delta, or an event's type and delta."""
    if api == "chat":
        return len(ev.choices[0].delta.content or "") if ev.choices else 0
    return len(ev.delta or "") if ev.type == "response.output_text.delta" else 0


def consume(api: str, answer, stream: bool) -> None:
    if not stream:
        text = answer.choices[0].message.content if api == "chat" else answer.output_text
        assert text
        return
    assert sum(read_event(api, ev) for ev in answer) > 0


async def consume_async(api: str, answer, stream: bool) -> None:
    if not stream:
        text = answer.choices[0].message.content if api == "chat" else answer.output_text
        assert text
        return
    n = 0
    async for ev in answer:
        n += read_event(api, ev)
    assert n > 0


def create(client, api):
    return client.chat.completions.create if api == "chat" else client.responses.create


def measured(n, run):
    cpu, start = time.process_time(), time.perf_counter()
    run()
    return n / (time.perf_counter() - start), (time.process_time() - cpu) * 1e6 / n


def row(sync_client, make_async, model, api, stream, tokens, width, n):
    if width == 1:
        def run():
            make = create(sync_client, api)
            for i in range(n):
                consume(api, make(**body(api, i, tokens, stream, model)), stream)
        return measured(n, run)

    async def all_of_them():
        # A client per event loop: the SDK's connection pool belongs to one.
        client = make_async()
        make = create(client, api)
        sem = asyncio.Semaphore(width)

        async def one(i):
            async with sem:
                await consume_async(api, await make(**body(api, i, tokens, stream, model)), stream)

        await asyncio.gather(*(one(i) for i in range(n)))
        close = getattr(client, "close", None)
        if close is not None:
            await close()

    return measured(n, lambda: asyncio.run(all_of_them()))


def median(v):
    return sorted(v)[len(v) // 2]


def main() -> None:
    os.sched_setaffinity(0, {0})
    binary = os.environ.get("LANEWAY_EMULATOR") or os.path.join(HERE, "..", "..", "target", "release", "laneway-emulator")
    with Emulator(scenario=os.path.join(HERE, "scenario.toml"), binary=binary) as emu:
        subprocess.run(["taskset", "-pc", "1", str(emu._proc.pid)], check=True, capture_output=True)
        kwargs = emu.router_kwargs()
        key = emu.bedrock_api_key("us-east-1")
        theirs_sync = sdk.OpenAI(base_url=f"{emu.url}/openai/v1", api_key=key, max_retries=0)
        ours_sync = OpenAI(config=CONFIG, **kwargs)
        for i in range(WARMUP):
            consume("chat", create(theirs_sync, "chat")(**body("chat", i, 16, False, SDK_MODEL)), False)
            consume("chat", create(ours_sync, "chat")(**body("chat", i, 16, False, MODEL)), False)
        rows = []
        for api in ("chat", "responses"):
            for stream in (False, True):
                for tokens in TOKENS:
                    for width in (1, 64):
                        n = max(64, CALLS_PER_ROW // tokens)
                        t, o = [], []
                        for _ in range(ROUNDS):
                            t.append(row(theirs_sync, lambda: sdk.AsyncOpenAI(base_url=f"{emu.url}/openai/v1", api_key=key, max_retries=0), SDK_MODEL, api, stream, tokens, width, n))
                            o.append(row(ours_sync, lambda: AsyncOpenAI(router=ours_sync.router), MODEL, api, stream, tokens, width, n))
                        rows.append((api, "stream" if stream else "whole", tokens, width, n, median([c for _, c in t]), median([c for _, c in o])))
    print(f"Python {sys.version.split()[0]}, openai {sdk.__version__}, laneway {laneway.__version__}; client pinned to one core; client CPU per call, medians of {ROUNDS} rounds")
    print("| API | answer | output tokens | in flight | calls | openai SDK CPU/call | laneway.openai CPU/call | SDK / Laneway |")
    print("|---|---|---|---|---|---|---|---|")
    for api, mode, tokens, width, n, theirs, ours in rows:
        print(f"| {api} | {mode} | {tokens} | {width} | {n} | {theirs / 1000:.2f} ms | {ours / 1000:.2f} ms | {theirs / ours:.1f}x |")


if __name__ == "__main__":
    main()
