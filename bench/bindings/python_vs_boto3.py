"""Laneway's Python binding against boto3's bedrock-runtime client (Converse), on one core,
against the same emulator, in the same run: `bench/bindings/run.sh` (or run this file with a
venv holding laneway and boto3).

The client process is pinned to CPU 0 and the emulator to CPU 1, so that requests per second
measure what one core of client can do. Both call the same model, pinned (issue 16's method);
Laneway still plans (SLO tier, targets, state) and measures. The official Rust SDK alone
(`core/examples/raw_sdk_floor.rs`), which Laneway calls through, is measured beside them on
the same rows: the floor under any client built on it. Sequential: one call at a
time. Concurrent: 64 in flight (asyncio for Laneway; a 64-thread pool for boto3, the usual way
to get concurrency from it). Then the memory of 1,000 streams held open at once.
"""

import asyncio
import concurrent.futures
import json
import os
import resource
import subprocess
import sys
import time

import boto3
from botocore.config import Config as BotoConfig

import laneway
from laneway.testing import ACCESS_KEY_ID, SECRET_ACCESS_KEY, Emulator

HERE = os.path.dirname(os.path.abspath(__file__))
# Converse against Converse: Laneway's generate sends a stream by default (routing.stream_generate).
DEFAULTS = {
    "families": {"nova": {"variants": ["amazon.nova-micro-v1:0", "amazon.nova-lite-v1:0", "amazon.nova-pro-v1:0"], "router": {"max_strong_share": 0.3}}},
}
FAMILY = {**DEFAULTS, "routing": {"stream_generate": False}}
# Both clients call the same model, pinned, as the method does (a family adds the
# classifier's work to Laneway's side only).
MODEL = "amazon.nova-lite-v1:0"
PROMPT = "Summarise ticket {i}: the invoice was charged twice and the customer wants a refund."
ROUNDS = int(os.environ.get("LANEWAY_BENCH_ROUNDS", "3"))


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def boto_client(url: str):
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=url,
        aws_access_key_id=ACCESS_KEY_ID,
        aws_secret_access_key=SECRET_ACCESS_KEY,
        config=BotoConfig(retries={"max_attempts": 1, "mode": "standard"}, max_pool_connections=64),
    )


def measured(n, run):
    """(requests per second, client CPU microseconds per request) of `run()` doing `n` calls."""
    cpu, start = time.process_time(), time.perf_counter()
    run()
    return n / (time.perf_counter() - start), (time.process_time() - cpu) * 1e6 / n


async def open_streams(router, n: int) -> float:
    """RSS growth (MB) with `n` streams open at once, each past its first event."""
    before = rss_mb()
    gens = [router.stream(PROMPT.format(i=i), family="nova", max_tokens=16) for i in range(n)]
    firsts = await asyncio.gather(*(g.__anext__() for g in gens))
    assert len(firsts) == n
    grown = rss_mb() - before
    for g in gens:
        await g.aclose()
    return grown


def median(v):
    return sorted(v)[len(v) // 2]


# The per-call rows of issue 16: generate and stream at 16, 64 and 512 output tokens, one call at
# a time and 64 in flight. Calls per row shrink with the answer's length (same order of work).
TOKENS = [int(t) for t in os.environ.get("LANEWAY_BENCH_TOKENS", "16,64,512").split(",")]
CALLS_PER_ROW = int(os.environ.get("LANEWAY_BENCH_CALLS", "6400"))
WARMUP = int(os.environ.get("LANEWAY_BENCH_WARMUP", "2000"))
# "generate", "stream" or both (the default).
CALLS = os.environ.get("LANEWAY_BENCH_ONLY", "generate,stream").split(",")


def calls_for(tokens: int) -> int:
    return max(64, CALLS_PER_ROW // tokens)


def boto_stream_call(client, i: int, tokens: int) -> None:
    out = client.converse_stream(
        modelId="amazon.nova-lite-v1:0",
        messages=[{"role": "user", "content": [{"text": PROMPT.format(i=i)}]}],
        inferenceConfig={"maxTokens": tokens},
    )
    deltas = sum(1 for ev in out["stream"] if "contentBlockDelta" in ev)
    assert deltas > 0


def boto_generate_call(client, i: int, tokens: int) -> None:
    out = client.converse(
        modelId="amazon.nova-lite-v1:0",
        messages=[{"role": "user", "content": [{"text": PROMPT.format(i=i)}]}],
        inferenceConfig={"maxTokens": tokens},
    )
    assert out["output"]["message"]["content"][0]["text"]


def boto_row(client, call, n: int, width: int, tokens: int):
    def run():
        if width == 1:
            for i in range(n):
                call(client, i, tokens)
        else:
            with concurrent.futures.ThreadPoolExecutor(max_workers=width) as pool:
                list(pool.map(lambda i: call(client, i, tokens), range(n)))
    return measured(n, run)


def laneway_row(router, streaming: bool, n: int, width: int, tokens: int):
    if width == 1:
        def run():
            for i in range(n):
                if streaming:
                    deltas = sum(1 for ev in router.stream_sync(PROMPT.format(i=i), model=MODEL, max_tokens=tokens) if ev.type == "text_delta")
                    assert deltas > 0
                else:
                    assert router.generate_sync(PROMPT.format(i=i), model=MODEL, max_tokens=tokens).text
        return measured(n, run)

    async def all_of_them():
        sem = asyncio.Semaphore(width)

        async def one(i):
            async with sem:
                if streaming:
                    deltas = 0
                    async for ev in router.stream(PROMPT.format(i=i), model=MODEL, max_tokens=tokens):
                        deltas += ev.type == "text_delta"
                    assert deltas > 0
                else:
                    assert (await router.generate(PROMPT.format(i=i), model=MODEL, max_tokens=tokens)).text

        await asyncio.gather(*(one(i) for i in range(n)))

    return measured(n, lambda: asyncio.run(all_of_them()))


def main() -> None:
    os.sched_setaffinity(0, {0})
    # The release build of the emulator, so that the server is not what limits the clients.
    binary = os.environ.get("LANEWAY_EMULATOR") or os.path.join(HERE, "..", "..", "target", "release", "laneway-emulator")
    with Emulator(scenario=os.path.join(HERE, "scenario.toml"), binary=binary) as emu:
        subprocess.run(["taskset", "-pc", "1", str(emu._proc.pid)], check=True, capture_output=True)
        router = laneway.Router(FAMILY, **emu.router_kwargs())
        # Generate at the defaults, each answer fetched as a stream (for its idle limit and
        # its hedge), measured beside the whole send on the generate rows.
        streamed = laneway.Router(DEFAULTS, **emu.router_kwargs())
        client = boto_client(emu.url)
        # Warm-up: connections, imports, caches, the router's state; as many calls as the Node
        # bench makes (where V8 needs them), for both contenders.
        for i in range(WARMUP):
            boto_generate_call(client, i, 16)
            router.generate_sync(PROMPT.format(i=i), model=MODEL, max_tokens=16)
            streamed.generate_sync(PROMPT.format(i=i), model=MODEL, max_tokens=16)
        for i in range(WARMUP // 4):
            boto_stream_call(client, i, 64)
            list(router.stream_sync(PROMPT.format(i=i), model=MODEL, max_tokens=64))
        floor_binary = os.environ.get("LANEWAY_FLOOR") or os.path.join(HERE, "..", "..", "target", "release", "examples", "raw_sdk_floor")

        def floor(streaming: bool, tokens: int, n: int, width: int):
            """The official Rust SDK alone, on the same core and emulator, as many in flight."""
            if not os.path.exists(floor_binary):
                return None
            mode = "stream" if streaming else "generate"
            out = subprocess.run(["taskset", "-c", "0", floor_binary, emu.url, mode, str(tokens), str(n)], check=True, capture_output=True, text=True)
            return float(out.stdout.strip())

        rows = []
        for streaming in [kind == "stream" for kind in CALLS]:
            for tokens in TOKENS:
                for width in (1, 64):
                    n = calls_for(tokens)
                    theirs, ours, floors, defaults = [], [], [], []
                    for _ in range(ROUNDS):
                        theirs.append(boto_row(client, boto_stream_call if streaming else boto_generate_call, n, width, tokens))
                        ours.append(laneway_row(router, streaming, n, width, tokens))
                        if not streaming:
                            defaults.append(laneway_row(streamed, False, n, width, tokens))
                        floors.append(floor(streaming, tokens, n, width))
                    rows.append({
                        "mode": "stream" if streaming else "generate", "tokens": tokens, "in_flight": width, "calls": n,
                        "boto3_cpu_us": median([c for _, c in theirs]), "laneway_cpu_us": median([c for _, c in ours]),
                        "boto3_req_s": median([r for r, _ in theirs]), "laneway_req_s": median([r for r, _ in ours]),
                        "rust_sdk_cpu_us": median(floors) if floors and None not in floors else None,
                        "laneway_streamed_cpu_us": median([c for _, c in defaults]) if defaults else None,
                    })
        streams_mb = asyncio.run(open_streams(router, 1000))
    print(f"Python {sys.version.split()[0]}, boto3 {boto3.__version__}, laneway {laneway.__version__}; client pinned to one core; client CPU per call, medians of {ROUNDS} rounds")
    print("| call | output tokens | in flight | boto3 CPU/call | Laneway CPU/call | boto3 / Laneway | Rust SDK alone | boto3 / Rust SDK alone |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        floor_us = r["rust_sdk_cpu_us"]
        floor_cols = f"{floor_us:,.0f} us | {r['boto3_cpu_us'] / floor_us:.1f}x" if floor_us else "| "
        print(f"| {r['mode']} | {r['tokens']} | {r['in_flight']} | {r['boto3_cpu_us']:,.0f} us | {r['laneway_cpu_us']:,.0f} us | **{r['boto3_cpu_us'] / r['laneway_cpu_us']:.1f}x** | {floor_cols} |")
    generate = [r for r in rows if r["laneway_streamed_cpu_us"]]
    if generate:
        print()
        print("generate: sent whole (`routing.stream_generate = false`) against fetched as a stream (the default)")
        print("| output tokens | in flight | boto3 CPU/call | Laneway whole | boto3 / whole | Laneway streamed | boto3 / streamed |")
        print("|---|---|---|---|---|---|---|")
        for r in generate:
            b, w, st = r["boto3_cpu_us"], r["laneway_cpu_us"], r["laneway_streamed_cpu_us"]
            print(f"| {r['tokens']} | {r['in_flight']} | {b:,.0f} us | {w:,.0f} us | **{b / w:.1f}x** | {st:,.0f} us | **{b / st:.1f}x** |")
    print(f"1,000 open Laneway streams: +{streams_mb:.1f} MB RSS ({streams_mb * 1024 / 1000:.1f} KB per stream)")
    print(json.dumps({"rows": rows, "streams_1000_mb": streams_mb}))


if __name__ == "__main__":
    main()
