"""A surge from Python: bursts of short calls on the emulator's `startup` scenario (Nova Micro:
64 concurrent requests per region and target, about 220 ms to the first token), with N in
flight, through Laneway (the built-in `nova` family, standard class, no configuration) and
through boto3's bedrock-runtime client (Converse on Nova Micro in us-east-1, its standard and
adaptive retry modes), in the same run: `bench/surge/run.sh`.

Each row: a fresh emulator, then a fresh client, then the burst; for Laneway also a second
burst on the same router and emulator (warm). It prints calls answered, lost (and why), the
burst's wall time, calls answered per second, the median and p99 latency of the answered calls,
and the client's CPU time per call.
"""

import asyncio
import collections
import concurrent.futures
import os
import resource
import sys
import time

import boto3
from botocore.config import Config as BotoConfig

import laneway
from laneway.testing import ACCESS_KEY_ID, SECRET_ACCESS_KEY, Emulator

CALLS = int(os.environ.get("LANEWAY_SURGE_CALLS", "2000"))
WIDTHS = [int(w) for w in os.environ.get("LANEWAY_SURGE_WIDTHS", "128,256,512,1024").split(",")]
MAX_TOKENS = 64
MODEL = "amazon.nova-micro-v1:0"
PROMPT = "Call {i}: in one sentence, what is a surge?"


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def summary(name, latencies, lost, wall, cpu):
    latencies.sort()
    answered = len(latencies)
    p = lambda q: latencies[min(answered - 1, int(q * answered))] * 1e3 if answered else float("nan")
    why = ", ".join(f"{k} {v}" for k, v in lost.most_common(3)) or "-"
    print(
        f"| {name} | {answered}/{CALLS} | {sum(lost.values())} ({why}) | {wall:.1f} | {answered / wall:.0f} "
        f"| {p(0.5):.0f} | {p(0.99):.0f} | {cpu / CALLS * 1e3:.2f} |",
        flush=True,
    )


async def laneway_burst(router, width):
    gate = asyncio.Semaphore(width)
    latencies, lost = [], collections.Counter()

    async def one(i):
        async with gate:
            started = time.perf_counter()
            try:
                await router.generate(PROMPT.format(i=i), family="nova", slo="standard", max_tokens=MAX_TOKENS)
                latencies.append(time.perf_counter() - started)
            except laneway.LanewayError as e:
                lost[e.kind] += 1

    cpu, started = cpu_s(), time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(CALLS)))
    return latencies, lost, time.perf_counter() - started, cpu_s() - cpu


def boto_burst(url, width, mode):
    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=url,
        aws_access_key_id=ACCESS_KEY_ID,
        aws_secret_access_key=SECRET_ACCESS_KEY,
        config=BotoConfig(retries={"mode": mode}, max_pool_connections=width),
    )
    latencies, lost = [], collections.Counter()

    def one(i):
        started = time.perf_counter()
        try:
            client.converse(
                modelId=MODEL,
                messages=[{"role": "user", "content": [{"text": PROMPT.format(i=i)}]}],
                inferenceConfig={"maxTokens": MAX_TOKENS},
            )
            latencies.append(time.perf_counter() - started)
        except client.exceptions.ClientError as e:
            lost[e.response["Error"]["Code"]] += 1
        except Exception as e:  # noqa: BLE001 - a lost call is counted, whatever lost it
            lost[type(e).__name__] += 1

    cpu, started = cpu_s(), time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(width) as pool:
        list(pool.map(one, range(CALLS)))
    return latencies, lost, time.perf_counter() - started, cpu_s() - cpu


def main():
    scenario = os.environ.get("LANEWAY_SURGE_SCENARIO", "startup")
    print(f"\nA burst of {CALLS} calls (max_tokens {MAX_TOKENS}) on the `{scenario}` scenario, N in flight\n")
    print("| client, N in flight | answered | lost (why) | wall s | answered/s | p50 ms | p99 ms | client CPU ms/call |")
    print("|---|---|---|---|---|---|---|---|")
    for width in WIDTHS:
        with Emulator(scenario=scenario) as emu:

            async def fresh_then_warm():
                router = laneway.Router(**emu.router_kwargs())
                summary(f"Laneway, {width}, fresh", *await laneway_burst(router, width))
                summary(f"Laneway, {width}, warm", *await laneway_burst(router, width))

            asyncio.run(fresh_then_warm())
        for mode in ("standard", "adaptive"):
            with Emulator(scenario=scenario) as emu:
                summary(f"boto3 {mode}, {width}", *boto_burst(emu.url, width, mode))


if __name__ == "__main__":
    sys.exit(main())
