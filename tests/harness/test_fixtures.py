"""The harness on real benchmark data (../shared/fixtures), with the loopback server as the judge.

MLLM-Bench: 7,560 real judge verdicts (9 models x 420 questions x 2 answer orders) are replayed:
the fake judge recognises which question, order and answers a request is about and returns the
verdict the real judge gave. The per-level win/tie/lose counts the harness reports must equal
counts computed here directly from the fixture.

AlignMMBench: the 1,056 seed groups (question_id "GROUP-k") drive the alignment score.
"""

import gzip
import json
import math
import re
from collections import Counter, defaultdict

import pytest

from benchforge_harness.cli import main
from benchforge_harness.prompts import Prompts
from benchforge_harness.release import load_release
from benchforge_harness.scoring.judges import render_pairwise_prompt as render_prompt
from tests.conftest import shared_fixture

ANCHOR = "llava-v1.5-13b"


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def models_file(tmp_path, server, concurrency=16):
    path = tmp_path / "models.toml"
    path.write_text(
        f'[models.judge]\nprovider = "openai"\nbase_url = "{server.base_url("openai")}"\nmodel = "judge"\n'
        f'api_key_env = "HARNESS_TEST_KEY"\nmax_concurrency = {concurrency}\nmax_retries = 0\n',
        encoding="utf-8",
    )
    return path


def request_text(body: dict) -> str:
    parts = []
    for message in body["messages"]:
        content = message["content"]
        parts += [content] if isinstance(content, str) else [p["text"] for p in content if p.get("type") == "text"]
    return "\n".join(parts)


# ------------------------------------------------------------------ MLLM-Bench


def load_mllm_bench():
    folder = shared_fixture("mllm-bench")
    questions = [json.loads(line) for line in (folder / "questions.jsonl").open(encoding="utf-8")]
    anchor = [json.loads(line) for line in (folder / "anchor_answers.jsonl").open(encoding="utf-8")]
    with gzip.open(folder / "judgments.jsonl.gz", "rt", encoding="utf-8") as fh:
        judgments = [json.loads(line) for line in fh]
    return questions, anchor, judgments


def release_item(question: dict) -> dict:
    kind = {"close-ended": "closed-ended"}.get(question["question_type"], question["question_type"])
    return {
        "id": str(question["id"]),
        "question": question["question"],
        "category": question["level"],
        "task": question["capability"],
        # one fixture row has an image URL in question_type: not a type, so left out
        "question_type": kind if kind in ("open-ended", "closed-ended", "compound") else None,
        "criteria": [line.strip() for line in question["criteria"].splitlines() if line.strip()],
    }


def expected_counts(judgments, level_of, verdict_of):
    """W/T/L per (model, level), straight from the verdicts: order 1 shows the anchor as Answer1."""
    votes = defaultdict(dict)
    for row in judgments:
        qid, order = row["unique_idx"].split("_")
        model = row["model_2"] if order == "1" else row["model_1"]
        model_position = "Answer2" if order == "1" else "Answer1"
        vote = verdict_of(row)
        side = "model" if vote == model_position else "anchor" if vote.startswith("Answer") else vote
        votes[(model, qid)][order] = side
    counts = defaultdict(Counter)
    for (model, qid), sides in votes.items():
        a, b = sides["1"], sides["2"]
        wins = {a, b} & {"model", "anchor"}
        if a == b:
            combined = a
        elif len(wins) == 1:
            combined = wins.pop()
        else:
            combined = "tie"
        result = {"model": "win", "anchor": "lose"}.get(combined, "tie")
        counts[(model, level_of[qid])][result] += 1
    return counts


def test_mllm_bench_verdicts_replayed_through_the_harness_give_the_fixture_counts(tmp_path, fake_llm, monkeypatch):
    questions, anchor_rows, judgments = load_mllm_bench()
    assert len(judgments) == 7560
    release_dir = tmp_path / "release"
    release_dir.mkdir()
    write_jsonl(release_dir / "items.jsonl", [release_item(q) for q in questions])
    release = load_release(release_dir)

    # Fixture layout (checked): order 1 = anchor's answer first, order 2 = the model's first.
    anchor_answer = {str(a["id"]): a["answer"] for a in anchor_rows}
    answers = defaultdict(dict)
    for row in judgments:
        qid, order = row["unique_idx"].split("_")
        if order == "1":
            assert row["model_1"] == ANCHOR and row["answer_1"] == anchor_answer[qid]
            answers[row["model_2"]][qid] = row["answer_2"]
    assert len(answers) == 9 and all(len(a) == 420 for a in answers.values())
    predictions = []
    for index, (model, by_id) in enumerate(sorted(answers.items())):
        predictions.append(
            str(
                write_jsonl(
                    tmp_path / f"model{index}.jsonl", [{"id": qid, "model": model, "answer": text} for qid, text in by_id.items()]
                )
            )
        )
    anchor_file = write_jsonl(
        tmp_path / "anchor.jsonl", [{"id": q, "model": ANCHOR, "answer": t} for q, t in anchor_answer.items()]
    )

    # The fake judge: prompt text -> the verdict the real judge gave for that question/order/answers.
    template = Prompts().get("pairwise")
    verdict_by_prompt, conflicts = {}, []
    for row in judgments:
        qid = row["unique_idx"].split("_")[0]
        prompt = render_prompt(template, release.item(qid), row["answer_1"], row["answer_2"], has_image=False)
        if prompt in verdict_by_prompt and verdict_by_prompt[prompt] != row["judge_output"]:
            conflicts.append(row["unique_idx"])
        verdict_by_prompt.setdefault(prompt, row["judge_output"])
    # A few requests are byte-identical for several models (same answers) yet the original judge,
    # sampling, voted differently. One request gets one verdict, so those rows take the first one.
    assert len(conflicts) <= 8, conflicts
    unknown = []

    def judge(body):
        prompt = request_text(body)
        if prompt not in verdict_by_prompt:
            unknown.append(prompt[:200])
            return "no verdict in the fixture for this request"
        return "Comparing both answers against the criteria.\n" + verdict_by_prompt[prompt]

    fake_llm.script("judge", judge)
    monkeypatch.setenv("HARNESS_TEST_KEY", "x")
    out = tmp_path / "out"
    code = main(
        [
            "pairwise",
            "--release",
            str(release_dir),
            "--models",
            str(models_file(tmp_path, fake_llm)),
            "--cache",
            str(tmp_path / "cache.sqlite"),
            "--judge",
            "judge",
            "--anchor",
            str(anchor_file),
            "--predictions",
            *predictions,
            "--out",
            str(out),
            "--bootstrap",
            "100",
            "--workers",
            "2",
        ]
    )
    assert code == 0
    assert unknown == []
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))

    level_of = {str(q["id"]): q["level"] for q in questions}

    def replayed_verdict(row):
        qid = row["unique_idx"].split("_")[0]
        return verdict_by_prompt[render_prompt(template, release.item(qid), row["answer_1"], row["answer_2"], has_image=False)]

    expected = expected_counts(judgments, level_of, replayed_verdict)
    levels = sorted(set(level_of.values()))
    assert len(levels) == 6
    for model in answers:
        got = results["models"][model]
        assert got["failed"] == 0
        for level in levels:
            row = got["by_category"][level]
            assert (row["win"], row["tie"], row["lose"]) == (
                expected[(model, level)]["win"],
                expected[(model, level)]["tie"],
                expected[(model, level)]["lose"],
            ), (model, level)
        assert got["win"] + got["tie"] + got["lose"] == 420
        assert got["win_rate"] == pytest.approx(sum(expected[(model, lv)]["win"] for lv in levels) / 420)

    # The raw fixture (no conflict resolution) differs only for models named in conflicting rows.
    raw = expected_counts(judgments, level_of, lambda row: row["parsed_vote"])
    touched = {
        r["model_2"] if r["unique_idx"].endswith("_1") else r["model_1"] for r in judgments if r["unique_idx"] in conflicts
    }
    for model in set(answers) - touched:
        for level in levels:
            assert raw[(model, level)] == expected[(model, level)]

    # Elo/Bradley-Terry cover every model and the anchor; the rankings agree with the win rates.
    assert set(results["elo"]["bootstrap"]) == set(answers) | {ANCHOR}
    assert results["elo"]["spearman_win_rate_vs_elo"] > 0.9

    # Scoring again makes no judge call: the cache answers everything.
    before = len(fake_llm.requests("judge"))
    code = main(
        [
            "pairwise",
            "--release",
            str(release_dir),
            "--models",
            str(tmp_path / "models.toml"),
            "--cache",
            str(tmp_path / "cache.sqlite"),
            "--judge",
            "judge",
            "--anchor",
            str(anchor_file),
            "--predictions",
            *predictions,
            "--out",
            str(tmp_path / "out2"),
            "--bootstrap",
            "100",
        ]
    )
    assert code == 0 and len(fake_llm.requests("judge")) == before
    again = json.loads((tmp_path / "out2" / "results.json").read_text(encoding="utf-8"))
    assert again["models"] == results["models"] and again["run"]["usage"]["calls"] == 0


# ------------------------------------------------------------------ AlignMMBench


def alignmmbench_items():
    rows = [json.loads(line) for line in shared_fixture("alignmmbench", "metadata.jsonl").open(encoding="utf-8")]
    items = []
    for row in rows:
        group, k = row["question_id"].rsplit("-", 1)
        history = []
        for turn in row["history"]:
            history += [{"role": "user", "content": turn["user"]}, {"role": "assistant", "content": turn["assistant"]}]
        items.append(
            {
                "id": row["question_id"],
                "seed_id": None if k == "0" else f"{group}-0",
                "question": row["prompt"],
                "images": [row["image_path"]],
                "history": history,
                "reference_answer": row["ref_answer"],
                "task": row["task"],
                "category": row["category"],
            }
        )
    return items


def steady_rating(item_id: str) -> int:
    """Depends on the seed group only: every group is perfectly consistent."""
    return int(item_id.split("-")[0]) % 10 + 1


def wobbly_rating(item_id: str) -> int:
    group, k = item_id.rsplit("-", 1)
    return (int(group) * 7 + int(k) ** 2) % 10 + 1


JUDGE_STYLES = (
    lambda r: json.dumps({"rating": r, "reason": "ok"}),
    lambda r: f'```json\n{{"rating": {r}, "reason": "理由"}}\n```\nThat is my grade.',
    lambda r: "{“rating”：" + str(r).translate(str.maketrans("0123456789", "０１２３４５６７８９")) + "，“reason”：“全角”}",
)


def population_std(values):
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))


def test_alignmmbench_seed_groups_drive_the_alignment_score(tmp_path, fake_llm, monkeypatch):
    items = alignmmbench_items()
    assert len(items) == 4978
    release_dir = tmp_path / "release"
    release_dir.mkdir()
    write_jsonl(release_dir / "items.jsonl", items)
    rate = {"steady": steady_rating, "wobbly": wobbly_rating}
    files = []
    for name in rate:
        files.append(
            str(
                write_jsonl(
                    tmp_path / f"{name}.jsonl", [{"id": i["id"], "model": name, "answer": f"<<{name}|{i['id']}>>"} for i in items]
                )
            )
        )

    def judge(body):
        name, item_id = re.search(r"<<(\w+)\|([\w-]+)>>", request_text(body)).groups()
        rating = rate[name](item_id)
        return JUDGE_STYLES[rating % 3](rating)

    fake_llm.script("judge", judge)
    monkeypatch.setenv("HARNESS_TEST_KEY", "x")
    out = tmp_path / "out"
    code = main(
        [
            "judge",
            "--release",
            str(release_dir),
            "--models",
            str(models_file(tmp_path, fake_llm, 32)),
            "--cache",
            str(tmp_path / "cache.sqlite"),
            "--judge",
            "judge",
            "--predictions",
            *files,
            "--out",
            str(out),
            "--workers",
            "2",
        ]
    )
    assert code == 0
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))

    groups = defaultdict(list)
    for item in items:
        groups[item["id"].rsplit("-", 1)[0]].append(item["id"])
    multi = {g: ids for g, ids in groups.items() if len(ids) > 1}
    assert len(groups) == 1056 and len(multi) == 785  # 271 dialogue items are groups of one

    steady = results["models"]["steady"]
    assert steady["judged"] == 4978 and steady["unparsed"] == 0
    assert steady["alignment"] == {"score": "inf", "groups": 785, "skipped_single": 271, "sigma_sum": 0.0}

    wobbly = results["models"]["wobbly"]
    sigma_sum = sum(population_std([wobbly_rating(i) for i in ids]) for ids in multi.values())
    assert wobbly["alignment"]["groups"] == 785
    assert wobbly["alignment"]["score"] == pytest.approx(785 / sigma_sum, rel=1e-9)
    assert wobbly["mean"] == pytest.approx(sum(wobbly_rating(i["id"]) for i in items) / 4978)
    by_task = defaultdict(list)
    for item in items:
        by_task[item["task"]].append(wobbly_rating(item["id"]))
    for task, values in by_task.items():
        assert wobbly["by_task"][task]["mean"] == pytest.approx(sum(values) / len(values))
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "| steady | " in report and "∞" in report
    assert (out / "charts" / "quadrant.svg").read_text(encoding="utf-8").startswith("<svg")
