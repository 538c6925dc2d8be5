"""Faults in one region of three with the defaults a user gets: no time limit configured.

A stalled region costs a call about a second (its learnt limit, or a hedge after its first
target's usual first-token time), not the standard class's 30-second ceiling, and the region is
then ejected: later calls do not pay it. A fresh router, meeting the fault on its first call,
pays seconds too: its limits and hedges start from the model's latency prior. Expired
credentials fail every call at once, typed.
"""

import asyncio
import time

import laneway
from laneway.testing import Emulator

CALLS = 40
IN_FLIGHT = 8
MODEL = "amazon.nova-lite-v1:0"  # three regions, us-east-1 first


async def _calls(router, n=CALLS, streamed=False):
    """`n` standard-class calls, `IN_FLIGHT` at once, streamed to their end or not: (answer or
    error, seconds) each."""
    gate = asyncio.Semaphore(IN_FLIGHT)

    async def answer(i):
        prompt = f"Request {i}: a short paragraph on reliable systems."
        if not streamed:
            return await router.generate(prompt, model=MODEL, max_tokens=200, slo="standard")
        # A stream broken after delivering text goes on from that text elsewhere.
        async for ev in router.stream(prompt, model=MODEL, max_tokens=200, slo="standard", continue_on_interrupt=True):
            if ev.type == "completed":
                return ev.response
        raise AssertionError("a stream ended without its response")

    async def one(i):
        async with gate:
            started = time.monotonic()
            try:
                got = await answer(i)
            except laneway.LanewayError as e:
                return e, time.monotonic() - started
            return got, time.monotonic() - started

    return await asyncio.gather(*(one(i) for i in range(n)))


def _paid(decision):
    """Whether a call paid the fault: an attempt failed in us-east-1, or a hedge answered for
    its attempt there (not a hedge between healthy regions once us-east-1 was ejected)."""
    if any(f["region"] == "us-east-1" for f in decision.failed_attempts):
        return True
    east_ejected = any(r.get("reason") == "target_demoted" and r.get("region") == "us-east-1" and r.get("health") == "region_ejected" for r in decision.reasons)
    return not east_ejected and bool((decision.hedge or {}).get("hedge_won"))


def _p99(seconds):
    ordered = sorted(seconds)
    return ordered[max(0, -(-len(ordered) * 99 // 100) - 1)]


async def test_a_stalled_region_costs_seconds_not_the_class_ceiling():
    with Emulator(scenario="fast") as emu:
        router = laneway.Router(**emu.router_kwargs())
        warm = await _calls(router)
        assert all(not isinstance(a, Exception) for a, _ in warm)
        fault_free_p99 = _p99([s for _, s in warm])
        emu.add_fault({"kind": "stall", "region": "us-east-1"})
        results = await _calls(router)
        errors = [a for a, _ in results if isinstance(a, Exception)]
        assert not errors, errors
        slowest = max(s for _, s in results)
        # The class's ceiling is 30 s; learnt limits and hedges make a stall cost about one.
        assert slowest <= fault_free_p99 + 5, (slowest, fault_free_p99)
        paid = [a for a, _ in results if _paid(a.decision)]
        assert len(paid) <= IN_FLIGHT, len(paid)
        # Ejected: the last calls did not go there at all.
        assert all(a.decision.region != "us-east-1" for a, _ in results[-IN_FLIGHT:])


async def test_expired_credentials_fail_every_call_at_once_typed():
    with Emulator(scenario="fast") as emu:
        router = laneway.Router(**emu.router_kwargs())
        emu.add_fault({"kind": "expired_token"})
        results = await _calls(router, 16)
        for error, seconds in results:
            assert isinstance(error, laneway.AuthenticationError), error
            assert error.code == "ExpiredTokenException"
            # No retry rounds until the 60 s deadline: at once.
            assert seconds < 5, seconds


async def test_a_fresh_router_meeting_a_stall_on_its_first_call_pays_seconds():
    """No warm-up: the fault is there from the first call (a process start, a deploy). The
    prior's hedge (Nova Lite's p99, at most the standard tier's 2.5 s) and its idle limit bound
    the calls, not the class's 30 s."""
    hedge_after = 2.5
    with Emulator(scenario="fast") as emu:
        baseline = await _calls(laneway.Router(**emu.router_kwargs()))
        assert all(not isinstance(a, Exception) for a, _ in baseline)
        fault_free_p99 = _p99([s for _, s in baseline])
        for fault, streamed in [
            ({"kind": "stall", "region": "us-east-1"}, False),
            ({"kind": "stall_mid_stream", "region": "us-east-1", "after_tokens": 20}, True),
        ]:
            router = laneway.Router(**emu.router_kwargs())
            emu.add_fault(fault)
            results = await _calls(router, streamed=streamed)
            emu.clear_faults()
            errors = [a for a, _ in results if isinstance(a, Exception)]
            assert not errors, (fault, errors)
            slowest = max(s for _, s in results)
            assert slowest <= fault_free_p99 + hedge_after + 5, (fault, slowest, fault_free_p99)
            assert slowest < 30, (fault, slowest)
