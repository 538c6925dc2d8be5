"""Derives routerarena.jsonl, in `laneway router train`'s JSONL shape, from RouterArena's cached
results of two models (see SOURCE.md). Deterministic: run it again and the file is the same.

    python3 data/routerarena/derive.py /path/to/RouterArena/cached_results
"""

import ast
import json
import pathlib
import sys

MODELS = ["claude-3-haiku-20240307", "gemini-2.0-flash-001"]  # weaker, stronger
PASS_MARK = 0.5  # a continuous score (translation, a few others) counts as good from here


def main(source: pathlib.Path) -> None:
    rows: dict[str, dict] = {}
    for model in MODELS:
        for line in (source / f"{model}.jsonl").read_text().splitlines():
            r = json.loads(line)
            ev = r["evaluation_result"]
            ev = ast.literal_eval(ev) if isinstance(ev, str) else ev
            row = rows.setdefault(r["global_index"], {"prompt": r["question"], "outcomes": {}})
            score = ev.get("score") if isinstance(ev, dict) else None
            if score is not None:
                row["outcomes"][model] = float(score) >= PASS_MARK
    out = pathlib.Path(__file__).with_name("routerarena.jsonl")
    with out.open("w") as f:
        for key in sorted(rows):
            row = rows[key]
            dataset = key.split("_", 1)[0]
            f.write(json.dumps({"global_index": key, "dataset": dataset, **row}, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]))
