#!/usr/bin/env python3
"""Joins RouteLLM's MT-Bench questions and GPT-4 judgements into `laneway router train`'s
JSONL shape: one line per (question, turn), the prompt as the router sees it (the first turn;
for the second, both user turns), an outcome per model: judge score >= PASS.

Usage: python3 data/mtbench/derive.py [DIR]  (DIR holds question.jsonl and judgements.jsonl;
default: this file's directory). Writes mtbench.jsonl beside this file.
"""
import json
import os
import sys

PASS = 8  # of 10: "good enough to ship" on MT-Bench's single-answer grading scale

here = os.path.dirname(os.path.abspath(__file__))
src = sys.argv[1] if len(sys.argv) > 1 else here

questions = {}
with open(os.path.join(src, "question.jsonl")) as f:
    for line in f:
        q = json.loads(line)
        questions[q["question_id"]] = q

scores = {}
with open(os.path.join(src, "judgements.jsonl")) as f:
    for line in f:
        j = json.loads(line)
        scores.setdefault((j["question_id"], j["turn"]), {})[j["model"]] = j["score"]

with open(os.path.join(here, "mtbench.jsonl"), "w") as out:
    for (qid, turn), by_model in sorted(scores.items()):
        q = questions[qid]
        prompt = q["turns"][0] if turn == 1 else q["turns"][0] + "\n\n" + q["turns"][1]
        out.write(json.dumps({
            "question_id": qid,
            "turn": turn,
            "category": q["category"],
            "prompt": prompt,
            "outcomes": {m: s >= PASS for m, s in sorted(by_model.items())},
            "scores": by_model,
        }, ensure_ascii=False) + "\n")
