"""Derives zeroeval.jsonl, in `laneway router train`'s JSONL shape, from ZeroEval's per-model
result files for GSM8K, CRUXEval and MATH Level 5 (see SOURCE.md). Each model's answer is graded
against the gold answer by a re-implementation of ZeroEval's own rule (`src/evaluation/
math_eval.py` for gsm and math-l5, `src/evaluation/crux_eval.py` for crux, helpers in
`src/evaluation/eval_utils.py`). Standard library only. Deterministic: run it again and the
file is the same.

    python3 data/zeroeval/derive.py /path/to/ZeroEval/result_dirs
    python3 data/zeroeval/derive.py /path/to/ZeroEval/result_dirs --check-all

It prints, per task, each model's accuracy as graded here next to the figure in ZeroEval's
`<task>.summary.json`, and the pair tables of SOURCE.md. `--check-all` grades every result file
of the three tasks (not only the models written out) against the published figures, and writes
nothing.
"""

import ast
import json
import operator
import pathlib
import re
import sys

# Per task: ZeroEval's directory, our dataset name, the field holding the question, the grader.
TASKS = [("gsm", "gsm8k", "question", "math"), ("crux", "crux", "question", "crux"),
         ("math-l5", "math-l5", "problem", "math")]
# The models written out, weaker first within each pair (keys of `outcomes`, ZeroEval's names).
PAIRS = [("claude-3-haiku-20240307", "claude-3-5-sonnet-20240620"),  # the main pair
         ("Meta-Llama-3.1-8B-Instruct", "Meta-Llama-3.1-70B-Instruct")]
# The order of `outcomes`: ascending accuracy over all rows (the loader orders by pass rate).
MODELS = ["Meta-Llama-3.1-8B-Instruct", "claude-3-haiku-20240307", "Meta-Llama-3.1-70B-Instruct",
          "claude-3-5-sonnet-20240620"]
assert sorted(MODELS) == sorted(m for pair in PAIRS for m in pair)
# ZeroEval's prompt is "\n## Question: \n\n{question}\n\n\n## Instruction \n\n{format template}".
PROMPT_HEAD = "\n## Question: \n\n"
PROMPT_TAIL = "\n\n\n## Instruction \n\n"


# ---- Answer extraction (eval_utils.py) -----------------------------------------------------

def first_complete_json(s: str):
    """The first brace-balanced `{...}` span of `s` (braces counted naively, also inside
    strings), parsed as JSON with its newlines removed; None when there is none or it does not
    parse. Only the first balanced span is tried."""
    depth, start = 0, None
    for i, ch in enumerate(s):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                try:
                    return json.loads(s[start:i + 1].replace("\n", ""))
                except json.JSONDecodeError:
                    return None
    return None


def regex_fields(s: str, keys=("reasoning", "answer")) -> dict:
    """The fallback for outputs that are not valid JSON: a quoted value after `"key":` (first
    without, then with, newlines and quotes inside), else an unquoted value up to a comma or
    whitespace after `"key":`, else after a bare `key:`."""
    found = {}
    for key in keys:
        m = re.search(f'"{key}"\\s*:\\s*"([^"]*?)"', s)
        if not m:
            m = re.search(f'"{key}"\\s*:\\s*"(.*?)"', s, re.DOTALL)
        if m:
            found[key] = m.group(1)
            continue
        m = re.search(f'"{key}"\\s*:\\s*([^,\\s]*)', s) or re.search(f'{key}\\s*:\\s*([^,\\s]*)', s)
        if m:
            found[key] = m.group(1)
    return found


def boxed_fallback(model: str, s: str):
    """ZeroEval's extra rule for Llama 3.1 models: when "boxed" is in the output's last 30
    characters, the first `\\boxed{word}` of the output."""
    if "Llama-3.1" in model and "boxed" in s[-30:]:
        m = re.search(r"\\boxed{([\w\d]+)}", s)
        if m:
            return m.group(1)
    return None


def extract_answer(model: str, output: str):
    """The model's answer field, or None when ZeroEval would count "no answer"."""
    parsed = first_complete_json(output)
    if parsed is None or "answer" not in parsed:
        parsed = regex_fields(output)
    if "answer" in parsed:
        return parsed["answer"]
    return boxed_fallback(model, output)


# ---- GSM8K and MATH-L5 (math_eval.py) ------------------------------------------------------

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
           ast.Pow: operator.pow, ast.BitXor: operator.xor, ast.BitAnd: operator.and_,
           ast.BitOr: operator.or_, ast.LShift: operator.lshift, ast.RShift: operator.rshift}
_UNOPS = {ast.UAdd: operator.pos, ast.USub: operator.neg, ast.Invert: operator.invert,
          ast.Not: operator.not_}
_CMPOPS = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
           ast.Gt: operator.gt, ast.GtE: operator.ge}


def _arith(node):
    """Python's value of a literal arithmetic expression; raises on anything else (names,
    calls, ...), where ZeroEval's `eval` would raise too for the answers in these files."""
    if isinstance(node, ast.Expression):
        return _arith(node.body)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _arith(node.left), _arith(node.right)
        if (isinstance(node.op, (ast.Pow, ast.LShift)) and isinstance(left, int)
                and isinstance(right, int) and abs(left) > 1 and right > 4096):
            raise OverflowError("too large")  # eval would overflow converting it, or hang
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNOPS:
        return _UNOPS[type(node.op)](_arith(node.operand))
    if isinstance(node, ast.BoolOp):
        value = None
        for v in node.values:
            value = _arith(v)
            if isinstance(node.op, ast.And) and not value or isinstance(node.op, ast.Or) and value:
                return value
        return value
    if isinstance(node, ast.Compare) and all(type(op) in _CMPOPS for op in node.ops):
        left = _arith(node.left)
        for op, comp in zip(node.ops, node.comparators):
            right = _arith(comp)
            if not _CMPOPS[type(op)](left, right):
                return False
            left = right
        return True
    raise ValueError("not a literal arithmetic expression")


def sanitize_math(answer: str) -> str:
    """ZeroEval's normalisation: drop `$`, strip, drop `,`; an answer with `/` that evaluates as
    a Python expression becomes `str(float(value))` ("3/4" -> "0.75"). ZeroEval calls `eval`;
    this evaluates literal arithmetic only."""
    answer = answer.replace("$", "").strip().replace(",", "")
    if "/" in answer:
        try:
            answer = str(float(_arith(ast.parse(answer.lstrip(" \t"), mode="eval"))))
        except Exception:
            pass
    return answer


FIRST_NUMBER = re.compile(r"-?\d+(\.\d+)?")


def grade_math(model: str, item: dict) -> bool:
    """Correct when the first number of the sanitised answer equals (as a float) the first
    number of the sanitised gold (`#` removed, as GSM8K's "#### 18")."""
    answer = extract_answer(model, item["output"][0])
    if answer is None:
        return False
    mine = FIRST_NUMBER.search(sanitize_math(str(answer)))
    gold = FIRST_NUMBER.search(sanitize_math(item["answer"].replace("#", "").strip()))
    return bool(mine and gold) and float(mine.group()) == float(gold.group())


# ---- CRUX (crux_eval.py) -------------------------------------------------------------------

def grade_crux(model: str, item: dict) -> bool:
    """Correct when the answer, with surrounding quotes stripped and newlines written `\\n`,
    is the same string as the gold output with surrounding quotes stripped."""
    answer = extract_answer(model, item["output"][0])
    if answer is None:
        return False
    mine = str(answer).strip("'\"").replace("\n", "\\n")
    gold = str(item["answer"]).strip("'\"")
    return mine == gold


GRADERS = {"math": grade_math, "crux": grade_crux}


# ---- Output --------------------------------------------------------------------------------

def load(path: pathlib.Path) -> list:
    return json.loads(path.read_text())


def published(source: pathlib.Path, task: str) -> dict:
    """Model -> accuracy (%) in ZeroEval's `<task>.summary.json`, by the summary's model names
    (a few differ from the file stems: RENAMED, after eval_utils.model_name_replacement)."""
    path = source / f"{task}.summary.json"
    return {r["Model"]: float(r["Acc"]) for r in load(path)} if path.exists() else {}


RENAMED = {"Llama-3.1-405B-Inst-fp8": "Llama-3.1-405B-Inst-fp8@together",
           "Llama-3.1-405B-Instruct-Turbo": "Llama-3.1-405B-Inst-fp8@together",
           "Meta-Llama-3.1-405B-Instruct@hyperbolic": "Llama-3.1-405B-Inst@hyperbolic",
           "deepseek-chat": "deepseek-v2-chat-0628", "deepseek-coder": "deepseek-v2-coder-0614",
           "DeepSeek-Coder-V2-0724": "deepseek-v2-coder-0724",
           "gemma-2-9b-it@together": "gemma-2-9b-it", "gemma-2-27b-it@together": "gemma-2-27b-it",
           "gemma-2-9b-it@nvidia": "gemma-2-9b-it", "gemma-2-27b-it@nvidia": "gemma-2-27b-it"}


def check_all(source: pathlib.Path) -> None:
    for task, _, _, grader in TASKS:
        pub = published(source, task)
        print(f"{task}: model, items, accuracy graded here, published, difference")
        for path in sorted((source / task).glob("*.json")):
            items = load(path)
            good = sum(GRADERS[grader](path.stem, it) for it in items)
            acc = round(100 * good / len(items), 2)
            p = pub.get(RENAMED.get(path.stem, path.stem))
            diff = f"{acc - p + 0.0:+.2f}" if p is not None else "-"
            print(f"  {path.stem:45} {len(items):5} {acc:6.2f} {p if p is not None else '-':>6} {diff}")


def main(source: pathlib.Path) -> None:
    rows = []
    for task, dataset, field, grader in TASKS:
        by_model = {}
        for model in MODELS:
            items = load(source / task / f"{model}.json")
            by_model[model] = {str(it["id"]): it for it in items}
        pub = published(source, task)
        print(f"{task}: model, accuracy on its whole file graded here, published")
        for model in MODELS:
            items = by_model[model].values()
            acc = 100 * sum(GRADERS[grader](model, it) for it in items) / len(items)
            print(f"  {model:30} {len(items):5} {acc:6.2f} {pub.get(model, '-')}")
        common = set.intersection(*(set(v) for v in by_model.values()))
        kept = []
        for key in sorted(common, key=int if task == "math-l5" else lambda k: int(k.rsplit("#", 1)[1])):
            first = by_model[MODELS[0]][key]
            question = first[field]
            for model in MODELS:  # the same question, gold and prompt template for every model
                it = by_model[model][key]
                assert it[field] == question and it["answer"] == first["answer"], (task, key, model)
                assert it["chat_history"][0].startswith(PROMPT_HEAD + question + PROMPT_TAIL), (task, key, model)
            outcomes = {m: GRADERS[grader](m, by_model[m][key]) for m in MODELS}
            rid = key if task != "math-l5" else f"math-l5-#{key}"
            kept.append({"id": rid, "dataset": dataset, "prompt": question, "outcomes": outcomes})
        report(dataset, kept)
        rows.extend(kept)
    report("all", rows)
    out = pathlib.Path(__file__).with_name("zeroeval.jsonl")
    with out.open("w") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"wrote {len(rows)} rows to {out}")


def report(name: str, rows: list) -> None:
    n = len(rows)
    accs = ", ".join(f"{m} {100 * sum(r['outcomes'][m] for r in rows) / n:.2f}" for m in MODELS)
    print(f"{name}: {n} prompts kept; accuracy: {accs}")
    for weak, strong in PAIRS:
        cells = [sum(1 for r in rows if (r["outcomes"][weak], r["outcomes"][strong]) == c)
                 for c in [(True, True), (False, True), (True, False), (False, False)]]
        print(f"  {weak} < {strong}: both right {cells[0]}, only strong {cells[1]}, "
              f"only weak {cells[2]}, both wrong {cells[3]}")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[2] == "--check-all":
        check_all(pathlib.Path(sys.argv[1]))
    else:
        main(pathlib.Path(sys.argv[1]))
