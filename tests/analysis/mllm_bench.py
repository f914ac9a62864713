"""The MLLM-Bench fixture (../shared/fixtures/mllm-bench: 420 questions, 9 models judged against an
anchor model in both answer orders) as the results matrix item analysis works on: each model's win
on each question, read by the harness's own pairwise per-item result from the real judge verdicts."""

import gzip
import json
from pathlib import Path

import numpy as np

from benchforge_harness import parse_item, scoring


def load(folder: Path):
    """(model labels, item ids, {id: (task, category)}, models x items results)."""
    questions = [json.loads(line) for line in (folder / "questions.jsonl").open(encoding="utf-8")]
    rows, models = {}, set()
    with gzip.open(folder / "judgments.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            judged = json.loads(line)
            qid, order = judged["unique_idx"].split("_")
            model = judged["model_2"] if order == "1" else judged["model_1"]  # order 1: the anchor's answer first
            models.add(model)
            rows[f"{model}\t{qid}\t{order}"] = {"status": "ok", "vote": judged["parsed_vote"]}
    items = [
        parse_item(
            {"id": str(q["id"]), "question": q["question"], "task": q["capability"], "category": q["level"]}, "questions.jsonl"
        )
        for q in questions
    ]
    keys = [item.id for item in items]
    groups = {item.id: (item.task, item.category) for item in items}
    labels = sorted(models)
    mode = scoring.MODES["pairwise"]
    values = np.full((len(labels), len(keys)), np.nan)
    for m, model in enumerate(labels):
        found = mode.item_results(rows, items, model)
        for i, key in enumerate(keys):
            if key in found:
                values[m, i] = found[key][0]
    return labels, keys, groups, values
