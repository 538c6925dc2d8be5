"""Derives mmlupro.jsonl, in `laneway router train`'s JSONL shape, from MMLU-Pro's published
per-question outputs of Llama-3.1-8B-Instruct and Llama-3.1-70B-Instruct (see SOURCE.md).
Standard library only. Deterministic: run it again and the file is the same. Takes a few minutes
(MMLU-Pro's answer-extraction regexes are slow on long, repetitive outputs).

Either a directory holding the repository's two eval_results files (the .zip files as committed,
or the .json files they contain):

    python3 data/mmlupro/derive.py /path/to/MMLU-Pro/eval_results

or a git directory of the repository and a commit, read with `git show COMMIT:eval_results/...`:

    python3 data/mmlupro/derive.py --git /path/to/MMLU-Pro/.git f418b116db00b065c2aea046518d8fcf74d39872
"""

import gzip
import io
import json
import pathlib
import re
import subprocess
import sys
import zipfile

# Outcome column name -> eval_results file stem; weaker first, then stronger.
MODELS = {
    "Llama-3.1-8B-Instruct": "model_outputs_Meta-Llama-3_1-8B-Instruct_5shots",
    "Llama-3.1-70B-Instruct": "model_outputs_Meta-Llama-3_1-70B-Instruct_5shots",
}
LETTERS = "ABCDEFGHIJKLMNOP"
# cot_prompt_lib/initial_prompt.txt, as evaluate_from_local.py reads it (then `{$}` -> category).
INITIAL_PROMPT = (
    "The following are multiple choice questions (with answers) about {$}. Think step by step and "
    'then finish your answer with "the answer is (X)" where X is the correct letter choice.\n\n\n'
)


def extract(text: str):
    """MMLU-Pro's own answer extraction (evaluate_from_local.py: extract_answer, extract_again,
    extract_final). None when no letter can be found."""
    m = re.search(r"answer is \(?([A-J])\)?", text)
    if m:
        return m.group(1)
    m = re.search(r".*[aA]nswer:\s*([A-J])", text)
    if m:
        return m.group(1)
    m = re.search(r"\b[A-J]\b(?!.*\b[A-J]\b)", text, re.DOTALL)
    return m.group(0) if m else None


def prompt_of(r: dict) -> str:
    """The prompt evaluate_from_local.py's generate_cot_prompt builds, without its 5 examples."""
    p = INITIAL_PROMPT.replace("{$}", r["category"]) + "\n"
    p += "Question:\n" + r["question"] + "\n" + "Options:\n"
    for letter, opt in zip(LETTERS, r["options"]):
        p += f"{letter}. {opt}\n"
    return p + "Answer: Let's think step by step."


def read_zip(data: bytes, stem: str) -> list:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return json.loads(z.read(stem + ".json"))


def load(args: list) -> dict:
    out = {}
    for name, stem in MODELS.items():
        if args[0] == "--git":
            git_dir, commit = args[1], args[2]
            data = subprocess.run(
                ["git", "--git-dir", git_dir, "show", f"{commit}:eval_results/{stem}.zip"],
                check=True, capture_output=True,
            ).stdout
            out[name] = read_zip(data, stem)
        else:
            d = pathlib.Path(args[0])
            if (d / f"{stem}.json").exists():
                out[name] = json.loads((d / f"{stem}.json").read_text())
            else:
                out[name] = read_zip((d / f"{stem}.zip").read_bytes(), stem)
    return out


def main(args: list) -> None:
    rows: dict = {}
    for name, records in load(args).items():
        for r in records:
            qid = int(r["question_id"])
            key = (r["category"], r["question"], r["options"], r["answer"])
            row = rows.setdefault(qid, {"key": key, "prompt": prompt_of(r), "outcomes": {}})
            if row["key"] != key:
                raise SystemExit(f"question {qid} differs between the files")
            if name in row["outcomes"]:
                raise SystemExit(f"question {qid} appears twice for {name}")
            found = extract(r["generated_text"])
            if found is not None and found != r["pred"]:
                raise SystemExit(f"question {qid}, {name}: pred {r['pred']!r} is not {found!r}")
            # No letter in the output: the file's `pred` is a placeholder ("G"), counted wrong.
            row["outcomes"][name] = found is not None and r["pred"] == r["answer"]
    out = pathlib.Path(__file__).with_name("mmlupro.jsonl.gz")
    # mtime 0 and no file name in the header: the same rows give the same bytes.
    with out.open("wb") as file, gzip.GzipFile(filename="", mode="wb", fileobj=file, mtime=0) as raw, io.TextIOWrapper(raw, encoding="utf-8") as f:
        for qid in sorted(rows):
            row = rows[qid]
            if len(row["outcomes"]) != len(MODELS):
                continue
            outcomes = {m: row["outcomes"][m] for m in MODELS}
            line = {"question_id": qid, "dataset": row["key"][0], "prompt": row["prompt"], "outcomes": outcomes}
            f.write(json.dumps(line, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
