"""The cross-language suite: the same scenario (scenario.json) through Rust, Python and Node,
each against a fresh emulator with the same faults, must give the same decisions, usage, cost
and error kinds. Run by scripts/test.sh after the bindings are installed:

    target/py/bin/python tests/cross_language/compare.py

Timing is left out of the comparison (latencies, how many retries fit in a deadline); what a
call decided, used and cost, and how it failed, are compared exactly (cost to 1e-12 USD).
"""

import json
import os
import subprocess
import sys

from laneway.testing import ACCESS_KEY_ID, SECRET_ACCESS_KEY, Emulator

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCENARIO = os.path.join(HERE, "scenario.json")


def runners():
    rust = os.environ.get("LANEWAY_CROSS_RUST") or os.path.join(ROOT, "target", "debug", "examples", "cross_language")
    return {
        "rust": [rust],
        "python": [sys.executable, os.path.join(HERE, "run_python.py")],
        "node": ["node", os.path.join(HERE, "run_node.js")],
    }


def run(language, command, scenario):
    with Emulator(scenario="fast") as emu:
        for fault in scenario["faults"]:
            emu.add_fault(fault)
        done = subprocess.run(command + [SCENARIO, emu.url, ACCESS_KEY_ID, SECRET_ACCESS_KEY], capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise SystemExit(f"{language} runner failed ({done.returncode}):\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# Fields of `openai`-shaped answers that are made fresh per call: ids and clocks.
FRESH = {"id", "created", "created_at", "item_id"}


def shaped(value):
    """An `openai`-shaped answer or event as it must agree: fresh ids and times left out,
    Laneway's extras as the essentials of its decision."""
    if isinstance(value, list):
        return [shaped(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for k, v in value.items():
        if k in FRESH:
            continue
        if k == "laneway":
            d = v["decision"]
            out[k] = {
                "decision": {x: d.get(x) for x in ("provider", "model", "family", "target", "region", "tier", "served_tier")},
                "failed_attempts": [{x: a.get(x) for x in ("target", "region", "kind")} for a in d.get("failed_attempts", [])],
                "reasons": sorted({r.get("reason", "") for r in d.get("reasons", [])}),
                "cost_usd": round(v["cost_usd"], 12),
            }
        else:
            out[k] = shaped(v)
    return out


def essentials(outcome):
    """What must agree across languages."""
    if "openai" in outcome or "openai_events" in outcome:
        return shaped(outcome)
    if "error" in outcome:
        e = outcome["error"]
        first = (e.get("attempts") or [{}])[0]
        return {"error": {"kind": e["kind"], "code": e.get("code"), "field": e.get("field"), "first_attempt_kind": first.get("kind"), "first_attempt_region": first.get("region")}}
    r = outcome["response"]
    d = r["decision"]
    return {
        "decision": {k: d.get(k) for k in ("provider", "model", "family", "target", "region", "tier", "served_tier", "endpoint")},
        "failed_attempts": [{k: a.get(k) for k in ("target", "region", "kind", "code")} for a in d.get("failed_attempts", [])],
        "reasons": sorted({x.get("reason", "") for x in d.get("reasons", [])}),
        "usage": r["usage"],
        "stop_reason": r["stop_reason"],
        "content": r["content"],
        "cost_usd": round(r["cost_usd"], 12),
    }


def summary(outcome):
    if "error" in outcome:
        return "error " + outcome["error"]["kind"]
    if "openai" in outcome or "openai_events" in outcome:
        last = outcome["openai"] if "openai" in outcome else outcome["openai_events"][-1]
        d = last.get("response", last)["laneway"]["decision"]
        return f"openai-shaped, {d['model']} in {d['region']} ({d['provider']})"
    return outcome["decision"]["model"] + " in " + outcome["decision"]["region"]


def main():
    with open(SCENARIO) as f:
        scenario = json.load(f)
    results = {lang: [essentials(o) for o in run(lang, cmd, scenario)] for lang, cmd in runners().items()}
    failures = []
    for i, case in enumerate(scenario["cases"]):
        rust = results["rust"][i]
        for lang in ("python", "node"):
            if results[lang][i] != rust:
                failures.append(f"case {case['name']!r}: {lang} differs from rust\n  rust:   {json.dumps(rust, sort_keys=True)}\n  {lang}: {json.dumps(results[lang][i], sort_keys=True)}")
        print(f"  {case['name']}: {summary(rust)}")
    # The scenario must exercise what it claims: a stream with tools, a failover, a refusal.
    kinds = [r.get("error", {}).get("kind") for r in results["rust"]]
    assert "invalid_request" in kinds, kinds
    assert any(r.get("failed_attempts") for r in results["rust"]), "no case failed over"
    # And its openai-shaped cases: a stream, a failover on the OpenAI surface, a refusal.
    shaped_cases = [r for r, c in zip(results["rust"], scenario["cases"]) if "openai" in c]
    assert any("openai_events" in r for r in shaped_cases), "no openai-shaped stream"
    assert any(r.get("openai", {}).get("laneway", {}).get("failed_attempts") for r in shaped_cases), "no openai-shaped case failed over"
    assert any(r.get("error", {}).get("kind") == "invalid_request" for r in shaped_cases), "no openai-shaped refusal"
    if failures:
        raise SystemExit("the languages disagree:\n" + "\n".join(failures))
    print(f"cross-language: {len(scenario['cases'])} cases agree in Rust, Python and Node")


if __name__ == "__main__":
    main()
