"""`agreement` never drops rows silently: judge rows naming models against human rows that do not
are paired row by row or refused with a message saying what is ambiguous; the paired and unpaired
counts are true; undefined correlations are explained; the half-point range rule is stated."""

import json

import pytest

from benchforge_harness.cli import main
from benchforge_harness.metrics import FUZZY_RANGES, RANGE_RULE, STRICT_RANGES, agreement, score_range


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


def run(tmp_path, judge_rows, human_rows):
    judge = write_jsonl(tmp_path / "judge.jsonl", judge_rows)
    human = write_jsonl(tmp_path / "human.jsonl", human_rows)
    code = main(["agreement", "--judge", judge, "--human", human, "--out", str(tmp_path / "a")])
    results = tmp_path / "a" / "results.json"
    return code, json.loads(results.read_text()) if code == 0 and results.exists() else None


HUMAN = [{"id": "q1", "score": 2}, {"id": "q2", "score": 5}, {"id": "q3", "score": 8}]


def test_several_judge_models_against_human_rows_without_models_are_refused(tmp_path, capsys):
    # X agrees perfectly, Y does not: the old pairing kept only Y (the last row per id), silently.
    judge = [{"id": r["id"], "model": "X", "rating": r["score"]} for r in HUMAN]
    judge += [{"id": r["id"], "model": "Y", "rating": 10 - r["score"]} for r in HUMAN]
    code, _ = run(tmp_path, judge, HUMAN)
    assert code == 2
    message = capsys.readouterr().err
    assert "several models" in message and "X, Y" in message and "add a 'model' field" in message


def test_human_rows_with_models_pair_every_judge_row(tmp_path):
    judge = [{"id": r["id"], "model": "X", "rating": r["score"]} for r in HUMAN]
    judge += [{"id": r["id"], "model": "Y", "rating": 10 - r["score"]} for r in HUMAN]
    human = [{**r, "model": m} for m in ("X", "Y") for r in HUMAN]
    code, results = run(tmp_path, judge, human)
    assert code == 0 and results["paired"] == 6 and results["judge_only"] == results["human_only"] == 0
    assert results["by_model"]["X"]["mae"] == 0 and results["by_model"]["X"]["pearson"] == pytest.approx(1.0)
    assert results["by_model"]["Y"]["pearson"] == pytest.approx(-1.0)


def test_one_judge_model_against_human_rows_without_models_pairs_by_id_with_true_counts(tmp_path):
    judge = [
        {"id": "q1", "model": "X", "rating": 3},
        {"id": "q2", "model": "X", "rating": 5},
        {"id": "q9", "model": "X", "rating": 1},
    ]
    human = HUMAN + [{"id": "q8", "score": 4}]
    code, results = run(tmp_path, judge, human)
    assert code == 0
    assert (results["paired"], results["judge_only"], results["human_only"]) == (2, 1, 2)
    assert results["overall"] == pytest.approx(agreement([3, 5], [2, 5]))


def test_undefined_correlations_say_why(tmp_path):
    code, results = run(tmp_path, [{"id": "q1", "rating": 4}], [{"id": "q1", "score": 5}])
    assert code == 0 and results["overall"]["pearson"] is None
    assert "only 1 pair" in results["undefined"]["all"]["pearson"]
    code, results = run(tmp_path, [{"id": r["id"], "rating": 7} for r in HUMAN], HUMAN)
    assert (
        results["overall"]["kendall_tau_b"] is None and "every judge score is 7" in results["undefined"]["all"]["kendall_tau_b"]
    )
    report = (tmp_path / "a" / "report.md").read_text(encoding="utf-8")
    assert "every judge score is 7" in report


def test_the_half_point_rule_is_in_the_help_and_the_report(tmp_path, capsys):
    assert score_range(2.5, FUZZY_RANGES) == 1 and score_range(8.5, STRICT_RANGES) == 6
    with pytest.raises(SystemExit):
        main(["agreement", "--help"])
    assert "2.5 is in fuzzy 3-5" in " ".join(capsys.readouterr().out.split())
    code, results = run(tmp_path, [{"id": r["id"], "rating": r["score"] + 0.5} for r in HUMAN], HUMAN)
    assert results["range_rule"] == RANGE_RULE
    assert "2.5 is in fuzzy 3-5" in (tmp_path / "a" / "report.md").read_text(encoding="utf-8")


def test_a_file_naming_the_model_in_some_rows_only_is_refused_never_paired_across_models(tmp_path, capsys):
    # The judge scored vlm-a's answer to o1; the only human score of o1 rates vlm-b's answer.
    judge = [{"id": "o1", "model": "vlm-a", "rating": 3}, {"id": "o2", "model": "vlm-a", "rating": 6}]
    human = [{"id": "o1", "model": "vlm-b", "score": 9}, {"id": "o2", "score": 6}]
    code, results = run(tmp_path, judge, human)
    assert code == 2 and results is None
    message = capsys.readouterr().err
    assert "human.jsonl names the model in some rows (e.g. id 'o1') but not in others (e.g. id 'o2')" in message
    assert "Add a 'model' field to every row, or to none" in message
    # The judge's side mixed is refused the same way.
    code, _ = run(tmp_path, [{"id": "o1", "model": "vlm-a", "rating": 3}, {"id": "o2", "rating": 6}], HUMAN)
    assert code == 2 and "judge.jsonl names the model in some rows" in capsys.readouterr().err


def test_scores_of_different_models_for_one_item_never_pair(tmp_path, capsys):
    judge = [{"id": "o1", "model": "vlm-a", "rating": 3}]
    human = [{"id": "o1", "model": "vlm-b", "score": 9}]
    code, _ = run(tmp_path, judge, human)
    assert code == 2 and "no row of" in capsys.readouterr().err
    code, results = run(tmp_path, judge + [{"id": "o1", "model": "vlm-b", "rating": 8}], human)
    assert code == 0 and results["paired"] == 1 and results["overall"]["mae"] == 1.0
