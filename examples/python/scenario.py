"""The example scenario in Python: an interactive chat turn, a background summary, a
family-routed request and a stream, against the emulator (no AWS account).

    pip install ./bindings-python && python examples/python/scenario.py
"""

import asyncio

import laneway
from laneway.testing import Emulator

CONFIG = {
    # The Nova family picks its variant per request with the built-in complexity classifier.
    "families": {"nova": {"variants": ["amazon.nova-micro-v1:0", "amazon.nova-lite-v1:0", "amazon.nova-pro-v1:0"], "router": {"max_strong_share": 0.3}}},
}


def show(label: str, r: laneway.Response) -> None:
    d = r.decision
    print(f"{label:<18} {d.model} in {d.region} at tier {d.tier}: {r.usage.output_tokens} tokens, ${r.cost_usd:.6f}")


async def main() -> None:
    with Emulator(scenario="startup", time_scale=0.2) as emu:
        router = laneway.Router(CONFIG, **emu.router_kwargs())

        chat = await router.generate("Where is my order #1234?", family="nova", slo="interactive", ttft_target_ms=800, max_tokens=60)
        show("interactive chat", chat)

        summary = await router.generate("Summarise this week's support tickets.", family="nova", slo="background", max_tokens=120)
        show("background summary", summary)

        hard = await router.generate("Prove that the square root of 2 is irrational, step by step.", family="nova", max_tokens=120)
        show("family-routed", hard)
        for reason in hard.decision.reasons:
            if reason["reason"] == "variant_scored":
                print("  classifier:", ", ".join(f"{v} loss {loss:.3f} (threshold {t:.3f})" for v, loss, t in reason["scores"]))

        print("stream:            ", end="")
        async for event in router.stream("Tell me a short story about a lighthouse.", family="nova", max_tokens=40):
            if event.type == "text_delta":
                print(event.text, end="", flush=True)
            elif event.type == "completed":
                print(f"\n  TTFT {event.response.timings.ttft_ms:.0f} ms, {event.response.usage.output_tokens} tokens")


if __name__ == "__main__":
    asyncio.run(main())
