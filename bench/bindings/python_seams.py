"""The seams (issue 46): the official SDKs with Laneway below them, against the same SDKs
calling the emulator directly, in the same run: boto3's `converse` / `converse_stream` through
`laneway.boto3` (botocore's before-send), and the `openai` SDK's Chat Completions through
`laneway.openai.client` (an httpx2 transport), beside Laneway's own `laneway.openai.OpenAI`.
`bench/bindings/run.sh` runs it (or run this file with a venv holding laneway, boto3 and
openai).

The client process is pinned to CPU 0 and the emulator (release build) to CPU 1, so client CPU
per call is what each costs one core. The SDK's own parsing stays on both sides: the question
is what the seam adds to it, and whether the total stays below the SDK's direct call (its
signing and HTTP stack) plus what a local gateway hop would add. Sequential calls, streams read
to their end.

With `LANEWAY_LITELLM` naming a `litellm` executable (`pip install 'litellm[proxy]'` in a venv
of its own), the gateway a user would compare with is measured in the same run: the `openai`
SDK calling Nova through a LiteLLM proxy (pinned to CPU 1 beside the emulator) against the
same SDK on `laneway.openai.client`; the proxy's CPU (its whole process tree) is counted with
the client's.
"""

import os
import subprocess
import sys
import time
import urllib.request

import boto3
import openai as sdk
from botocore.config import Config

import laneway
import laneway.boto3
import laneway.openai
from laneway.testing import ACCESS_KEY_ID, SECRET_ACCESS_KEY, Emulator

HERE = os.path.dirname(os.path.abspath(__file__))
NOVA = "amazon.nova-lite-v1:0"
GPT = "openai.gpt-5.6-terra"
SDK_GPT = "global.openai.gpt-5.6-terra"
PROMPT = "Summarise ticket {i}: the invoice was charged twice and the customer wants a refund."
ROUNDS = int(os.environ.get("LANEWAY_BENCH_ROUNDS", "3"))
TOKENS = [int(t) for t in os.environ.get("LANEWAY_BENCH_TOKENS", "64,512").split(",")]
CALLS = int(os.environ.get("LANEWAY_BENCH_CALLS", "1600"))
WARMUP = int(os.environ.get("LANEWAY_BENCH_WARMUP", "200"))
CONFIG = {"routing": {"stream_generate": False}}


def measured(n, run):
    cpu = time.process_time()
    run()
    return (time.process_time() - cpu) * 1e6 / n


def converse(client, i, tokens, stream):
    ask = dict(modelId=NOVA, messages=[{"role": "user", "content": [{"text": PROMPT.format(i=i)}]}], inferenceConfig={"maxTokens": tokens})
    if not stream:
        assert client.converse(**ask)["output"]["message"]["content"][0]["text"]
        return
    n = 0
    for event in client.converse_stream(**ask)["stream"]:
        if "contentBlockDelta" in event:
            n += len(event["contentBlockDelta"]["delta"].get("text", ""))
    assert n > 0


def chat(client, model, i, tokens, stream):
    body = dict(model=model, messages=[{"role": "user", "content": PROMPT.format(i=i)}], max_completion_tokens=tokens)
    if not stream:
        assert client.chat.completions.create(**body).choices[0].message.content
        return
    n = 0
    for chunk in client.chat.completions.create(stream=True, **body):
        if chunk.choices:
            n += len(chunk.choices[0].delta.content or "")
    assert n > 0


def median(v):
    return sorted(v)[len(v) // 2]


def tree_cpu(root):
    """CPU seconds of process `root` and its descendants so far (user and system)."""
    parents, times = {}, {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        times[int(entry)] = (int(fields[11]) + int(fields[12])) / tick
    total, stack = 0.0, [root]
    while stack:
        pid = stack.pop()
        total += times.get(pid, 0.0)
        stack.extend(p for p, parent in parents.items() if parent == pid)
    return total


KEY = "sk-laneway-bench-0123456789abcdef0123456789"


def litellm_proxy(binary, emu):
    """A LiteLLM proxy serving Nova from the emulator (no retries of its own), pinned to CPU 1."""
    config = os.path.join(os.environ.get("TMPDIR", "/tmp"), "laneway-bench-litellm.yaml")
    with open(config, "w") as f:
        f.write(f"""model_list:
  - model_name: nova
    litellm_params:
      model: bedrock/converse/{NOVA}
      aws_access_key_id: {ACCESS_KEY_ID}
      aws_secret_access_key: {SECRET_ACCESS_KEY}
      aws_region_name: us-east-1
      aws_bedrock_runtime_endpoint: {emu.url}
general_settings:
  master_key: {KEY}
litellm_settings:
  num_retries: 0
""")
    proc = subprocess.Popen(["taskset", "-c", "1", binary, "--config", config, "--host", "127.0.0.1", "--port", "4417", "--num_workers", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(240):
        try:
            urllib.request.urlopen("http://127.0.0.1:4417/health/liveliness", timeout=1)
            return proc
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError("the LiteLLM proxy did not start")


def main() -> None:
    os.sched_setaffinity(0, {0})
    binary = os.environ.get("LANEWAY_EMULATOR") or os.path.join(HERE, "..", "..", "target", "release", "laneway-emulator")
    with Emulator(scenario=os.path.join(HERE, "scenario.toml"), binary=binary) as emu:
        subprocess.run(["taskset", "-pc", "1", str(emu._proc.pid)], check=True, capture_output=True)
        router = laneway.Router(CONFIG, **emu.router_kwargs())
        creds = dict(aws_access_key_id=ACCESS_KEY_ID, aws_secret_access_key=SECRET_ACCESS_KEY)
        direct_bedrock = boto3.client("bedrock-runtime", region_name="us-east-1", endpoint_url=emu.url, config=Config(retries={"max_attempts": 1}), **creds)
        seam_bedrock = laneway.boto3.client(router, region_name="us-east-1", **creds)
        key = emu.bedrock_api_key("us-east-1")
        direct_openai = sdk.OpenAI(base_url=f"{emu.url}/openai/v1", api_key=key, max_retries=0)
        seam_openai = laneway.openai.client(router)
        lookalike = laneway.openai.OpenAI(router=router)
        gateway = os.environ.get("LANEWAY_LITELLM")
        proxy = litellm_proxy(gateway, emu) if gateway else None
        sides = {
            "converse": [("boto3 direct", lambda i, t, s: converse(direct_bedrock, i, t, s)),
                         ("boto3 on laneway.boto3", lambda i, t, s: converse(seam_bedrock, i, t, s))],
            "chat": [("openai direct", lambda i, t, s: chat(direct_openai, SDK_GPT, i, t, s)),
                     ("openai on laneway.openai.client", lambda i, t, s: chat(seam_openai, GPT, i, t, s)),
                     ("laneway.openai.OpenAI", lambda i, t, s: chat(lookalike, GPT, i, t, s))],
        }
        if proxy is not None:
            via_gateway = sdk.OpenAI(base_url="http://127.0.0.1:4417/v1", api_key=KEY, max_retries=0)
            sides["gateway"] = [("openai via LiteLLM proxy (client + proxy)", lambda i, t, s: chat(via_gateway, "nova", i, t, s)),
                                ("openai on laneway.openai.client", lambda i, t, s: chat(seam_openai, NOVA, i, t, s))]
        for group in sides.values():
            for _, call in group:
                for i in range(WARMUP):
                    call(i, 16, False)
        rows = []
        for api, group in sides.items():
            for stream in (False, True):
                for tokens in TOKENS:
                    n = max(32, CALLS // tokens)
                    figures = {name: [] for name, _ in group}
                    for _ in range(ROUNDS):
                        for name, call in group:
                            before = tree_cpu(proxy.pid) if proxy is not None and "LiteLLM" in name else None
                            cost = measured(n, lambda: [call(i, tokens, stream) for i in range(n)])
                            if before is not None:
                                cost += (tree_cpu(proxy.pid) - before) * 1e6 / n
                            figures[name].append(cost)
                    rows.append((api, "stream" if stream else "whole", tokens, n, {k: median(v) for k, v in figures.items()}))
        if proxy is not None:
            proxy.terminate()
            proxy.wait()
    print(f"Python {sys.version.split()[0]}, boto3 {boto3.__version__}, openai {sdk.__version__}, laneway {laneway.__version__}; client pinned to one core; client CPU per call (ms), medians of {ROUNDS} rounds")
    for api in sides:
        names = [name for name, _ in sides[api]]
        print()
        print("| answer | output tokens | calls | " + " | ".join(names) + f" | {names[1]} / {names[0]} |")
        print("|---|---|---|" + "---|" * len(names) + "---|")
        for a, mode, tokens, n, f in rows:
            if a != api:
                continue
            cells = " | ".join(f"{f[name] / 1000:.2f}" for name in names)
            print(f"| {mode} | {tokens} | {n} | {cells} | {f[names[1]] / f[names[0]]:.2f}x |")


if __name__ == "__main__":
    main()
