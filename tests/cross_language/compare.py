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


def essentials(outcome):
    """What must agree across languages."""
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
        print(f"  {case['name']}: {'error ' + rust['error']['kind'] if 'error' in rust else rust['decision']['model'] + ' in ' + rust['decision']['region']}")
    # The scenario must exercise what it claims: a stream with tools, a failover, a refusal.
    kinds = [r.get("error", {}).get("kind") for r in results["rust"]]
    assert "invalid_request" in kinds, kinds
    assert any(r.get("failed_attempts") for r in results["rust"]), "no case failed over"
    if failures:
        raise SystemExit("the languages disagree:\n" + "\n".join(failures))
    print(f"cross-language: {len(scenario['cases'])} cases agree in Rust, Python and Node")


if __name__ == "__main__":
    main()
