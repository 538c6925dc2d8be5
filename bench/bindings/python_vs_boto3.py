"""Laneway's Python binding against boto3's bedrock-runtime client (Converse), on one core,
against the same emulator, in the same run: `bench/bindings/run.sh` (or run this file with a
venv holding laneway and boto3).

The client process is pinned to CPU 0 and the emulator to CPU 1, so that requests per second
measure what one core of client can do. Laneway runs its full plan (a family routed by the
classifier, SLO tier, targets, state); boto3 calls the model directly. Sequential: one call at a
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
FAMILY = {
    "families": {"nova": {"variants": ["amazon.nova-micro-v1:0", "amazon.nova-lite-v1:0", "amazon.nova-pro-v1:0"], "router": {"max_strong_share": 0.3}}},
    "routing": {"stream_generate": False},
}
PROMPT = "Summarise ticket {i}: the invoice was charged twice and the customer wants a refund."
SEQUENTIAL = int(os.environ.get("LANEWAY_BENCH_SEQUENTIAL", "1500"))
CONCURRENT = int(os.environ.get("LANEWAY_BENCH_CONCURRENT", "4000"))
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


def boto_call(client, i: int) -> None:
    out = client.converse(
        modelId="amazon.nova-lite-v1:0",
        messages=[{"role": "user", "content": [{"text": PROMPT.format(i=i)}]}],
        inferenceConfig={"maxTokens": 16},
    )
    assert out["output"]["message"]["content"][0]["text"]


def measured(n, run):
    """(requests per second, client CPU microseconds per request) of `run()` doing `n` calls."""
    cpu, start = time.process_time(), time.perf_counter()
    run()
    return n / (time.perf_counter() - start), (time.process_time() - cpu) * 1e6 / n


def boto_sequential(client):
    def run():
        for i in range(SEQUENTIAL):
            boto_call(client, i)
    return measured(SEQUENTIAL, run)


def boto_concurrent(client):
    def run():
        with concurrent.futures.ThreadPoolExecutor(max_workers=64) as pool:
            list(pool.map(lambda i: boto_call(client, i), range(CONCURRENT)))
    return measured(CONCURRENT, run)


def laneway_sequential(router):
    def run():
        for i in range(SEQUENTIAL):
            assert router.generate_sync(PROMPT.format(i=i), family="nova", max_tokens=16).text
    return measured(SEQUENTIAL, run)


def laneway_concurrent(router):
    async def all_of_them():
        sem = asyncio.Semaphore(64)

        async def one(i):
            async with sem:
                r = await router.generate(PROMPT.format(i=i), family="nova", max_tokens=16)
                assert r.text

        await asyncio.gather(*(one(i) for i in range(CONCURRENT)))

    return measured(CONCURRENT, lambda: asyncio.run(all_of_them()))


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


def main() -> None:
    os.sched_setaffinity(0, {0})
    # The release build of the emulator, so that the server is not what limits the clients.
    binary = os.environ.get("LANEWAY_EMULATOR") or os.path.join(HERE, "..", "..", "target", "release", "laneway-emulator")
    with Emulator(scenario=os.path.join(HERE, "scenario.toml"), binary=binary) as emu:
        subprocess.run(["taskset", "-pc", "1", str(emu._proc.pid)], check=True, capture_output=True)
        router = laneway.Router(FAMILY, **emu.router_kwargs())
        client = boto_client(emu.url)
        # Warm-up: connections, imports, the router's state.
        boto_call(client, 0)
        router.generate_sync("warm up", family="nova", max_tokens=16)
        results = {"boto3 sequential": [], "laneway sequential": [], "boto3 concurrent (64 threads)": [], "laneway concurrent (64 in flight)": []}
        for _ in range(ROUNDS):
            results["boto3 sequential"].append(boto_sequential(client))
            results["laneway sequential"].append(laneway_sequential(router))
            results["boto3 concurrent (64 threads)"].append(boto_concurrent(client))
            results["laneway concurrent (64 in flight)"].append(laneway_concurrent(router))
        streams_mb = asyncio.run(open_streams(router, 1000))
    out = {k: {"req_per_s": median([r for r, _ in v]), "cpu_us_per_req": median([c for _, c in v])} for k, v in results.items()}
    print(f"Python {sys.version.split()[0]}, boto3 {boto3.__version__}, laneway {laneway.__version__}; client pinned to one core; medians of {ROUNDS} rounds")
    for k, v in out.items():
        print(f"  {k:<36} {v['req_per_s']:>8.0f} req/s   {v['cpu_us_per_req']:>7.0f} us client CPU/req   {1e6 / v['cpu_us_per_req']:>7.0f} req per CPU-second")
    for mode, ours, theirs in [("sequential", "laneway sequential", "boto3 sequential"), ("concurrent", "laneway concurrent (64 in flight)", "boto3 concurrent (64 threads)")]:
        wall = out[ours]["req_per_s"] / out[theirs]["req_per_s"]
        per_cpu = out[theirs]["cpu_us_per_req"] / out[ours]["cpu_us_per_req"]
        print(f"  {mode}: Laneway / boto3 = {wall:.1f}x requests per second, {per_cpu:.1f}x requests per CPU-second")
    print(f"  1,000 open Laneway streams: +{streams_mb:.1f} MB RSS ({streams_mb * 1024 / 1000:.1f} KB per stream)")
    print(json.dumps({"results": out, "streams_1000_mb": streams_mb}))


if __name__ == "__main__":
    main()
