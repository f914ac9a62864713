"""Every figure the harness prints is a total function: ties, one model, empty groups and runs whose
every call failed give defined output with the reason, never a traceback. Each scoring command runs
on such results end to end against the loopback server, and `report` rebuilds each saved results.json."""

import json

import pytest

from benchforge_harness.commands import report_builders
from benchforge_harness.report import to_html, to_markdown
from tests.fakes.llm_server import Fault


def run_and_rebuild(env, capsys, command, *args, expect=(0, 1)):
    """Run `command`, then `report` on the results.json it saved; both finish without a traceback."""
    out = env.root / f"out-{command}-{len(list(env.root.glob('out-*')))}"
    code = env.run(command, *args, "--out", str(out))
    captured = capsys.readouterr()
    assert code in expect, captured.err
    assert "Traceback" not in captured.err
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    (out / "report.md").unlink()
    assert env.run("report", str(out / "results.json")) == 0, capsys.readouterr().err
    return results, (out / "report.md").read_text(encoding="utf-8")


def anchored_judge(body):
    """Order 1 shows the anchor first: the judge always votes for the answer saying "good"."""
    text = body["messages"][0]["content"]
    first = text.split("[Answer1]")[1].split("[End of Answer1]")[0]
    return "reasons\nAnswer1" if "good" in first else "reasons\nAnswer2"


def pairwise(env, capsys, *predictions, bootstrap="20"):
    anchor = env.predictions("anchor", {"c1": "good", "c1-r1": "meh", "w1": "meh", "t1": "good"})
    return run_and_rebuild(
        env,
        capsys,
        "pairwise",
        "--judge",
        "judge",
        "--anchor",
        anchor,
        "--predictions",
        *predictions,
        "--text-only",
        "--bootstrap",
        bootstrap,
    )


def test_pairwise_with_two_models_tied_on_win_rate_reports_why_there_is_no_rank_correlation(env, capsys):
    env.server.script("judge", anchored_judge)
    answers = {"c1": "meh", "c1-r1": "good", "w1": "good", "t1": "meh"}
    a = env.predictions("vlm-a", answers)
    b = env.predictions("vlm-b", answers)  # the same answers: the same win rate
    results, report = pairwise(env, capsys, a, b)
    assert results["models"]["vlm-a"]["win_rate"] == results["models"]["vlm-b"]["win_rate"]
    assert results["elo"]["spearman_win_rate_vs_elo"] is None
    assert results["elo"]["spearman_undefined"].startswith("every model's win rate is")
    assert "Spearman correlation of the win-rate and Elo rankings: undefined (every model's win rate is" in report


def test_pairwise_ties_left_by_failed_judge_calls_still_report(env, capsys):
    def judge(body):
        text = body["messages"][0]["content"]
        if "BROKEN" in text:
            return Fault(status=400, body={"error": {"message": "bad request"}})
        return anchored_judge(body)

    env.server.script("judge", judge)
    a = env.predictions("vlm-a", {"c1": "meh", "c1-r1": "good", "w1": "BROKEN", "t1": "meh"})
    b = env.predictions("vlm-b", {"c1": "meh", "c1-r1": "BROKEN", "w1": "good", "t1": "meh"})
    results, report = pairwise(env, capsys, a, b)
    assert results["models"]["vlm-a"]["failed"] == results["models"]["vlm-b"]["failed"] >= 1
    assert "undefined" in report


def test_pairwise_with_one_model_says_a_rank_correlation_needs_two(env, capsys):
    env.server.script("judge", anchored_judge)
    results, report = pairwise(env, capsys, env.predictions("vlm-a", {"c1": "meh", "c1-r1": "good"}))
    assert results["elo"]["spearman_win_rate_vs_elo"] is None
    assert "undefined (only 1 model: a rank correlation needs at least two models)" in report


def test_pairwise_whose_every_judge_call_failed_has_no_battles_and_says_so(env, capsys):
    env.server.script("judge", Fault(status=400, body={"error": {"message": "bad request"}}))
    results, report = pairwise(env, capsys, env.predictions("vlm-a", {"c1": "meh", "c1-r1": "good"}))
    assert "elo" not in results and results["models"]["vlm-a"]["failed"] == results["models"]["vlm-a"]["total"]
    assert "No Elo or Bradley-Terry ratings: no question was decided" in report


@pytest.mark.parametrize("command", ["judge", "touchstone", "hallucination"])
def test_a_judge_run_whose_every_call_failed_reports_no_mean_and_why(env, capsys, command):
    env.server.script("judge", Fault(status=400, body={"error": {"message": "bad request"}}))
    preds = env.predictions("m", {"c1": "x", "c1-r1": "y", "w1": "z", "w1-r1": "w", "t1": "v"})
    results, report = run_and_rebuild(env, capsys, command, "--judge", "judge", "--predictions", preds, expect=(1,))
    model = results["models"]["m"]
    assert model[{"judge": "mean", "touchstone": "score", "hallucination": "mean"}[command]] is None
    assert "n/a" in report


def test_mcq_whose_every_call_failed_reports_no_accuracy_and_why(env, capsys):
    env.server.script("vlm", Fault(status=400, body={"error": {"message": "bad request"}}))
    results, report = run_and_rebuild(env, capsys, "mcq", "--model", "vlm", expect=(1,))
    assert results["models"]["vlm"]["circular"] is None and results["models"]["vlm"]["undecided"] == 2
    assert "n/a" in report


def test_mcq_says_on_the_console_which_items_it_skipped_and_why(env, capsys):
    env.server.script("vlm", "A")
    out = env.root / "q"
    assert env.run("mcq", "--model", "vlm", "--out", str(out)) == 0
    err = capsys.readouterr().err
    assert "1 multiple-choice item(s) cannot be scored" in err and "no answer key" in err


def test_agreement_of_one_pair_reports_undefined_correlations(env, capsys):
    judge = env.root / "judge.jsonl"
    judge.write_text(json.dumps({"id": "q1", "model": "m", "status": "ok", "rating": 5}) + "\n", encoding="utf-8")
    human = env.root / "human.jsonl"
    human.write_text(json.dumps({"id": "q1", "model": "m", "score": 7}) + "\n", encoding="utf-8")
    results, report = run_and_rebuild(env, capsys, "agreement", "--judge", str(judge), "--human", str(human), expect=(0,))
    assert results["overall"]["pearson"] is None and "only 1 pair" in report


# What each mode's report makes of results with no model, one model, empty groups and no number at all.
DEGENERATE = {
    "judge": {
        "command": "judge",
        "release": "r",
        "items": 0,
        "models": {
            "m": {
                "judged": 0,
                "unparsed": 0,
                "unparsed_ids": [],
                "errors": 0,
                "error_ids": [],
                "no_answer": 0,
                "mean": None,
                "by_task": {},
                "by_category": {},
                "alignment": {"score": None, "groups": 0, "skipped_single": 0, "sigma_sum": 0.0},
            }
        },
    },
    "pairwise": {
        "command": "pairwise",
        "release": "r",
        "anchor": "a",
        "items": 0,
        "models": {
            "m": {
                "win": 0,
                "tie": 0,
                "lose": 0,
                "failed": 0,
                "total": 0,
                "win_rate": None,
                "by_category": {},
                "outcomes": {},
                "same_vote_both_orders": None,
                "failed_ids": {},
            }
        },
    },
    "touchstone": {
        "command": "touchstone",
        "release": "r",
        "items": 0,
        "models": {
            "m": {
                "scored": 0,
                "unparsed": 0,
                "errors": 0,
                "no_answer": 0,
                "score": None,
                "score_x100": None,
                "reference_score": None,
                "by_category": {},
                "by_task": {},
            }
        },
    },
    "hallucination": {
        "command": "hallucination",
        "release": "r",
        "items": 0,
        "models": {"m": {"scored": 0, "unparsed": 0, "errors": 0, "no_answer": 0, "mean": None, "by_category": {}}},
    },
    "mcq": {
        "command": "mcq",
        "release": "r",
        "items": 0,
        "skipped_without_answer_key": 0,
        "text_only": False,
        "models": {
            "m": {
                "n": 0,
                "vanilla": None,
                "circular": None,
                "undecided": 0,
                "by_category": {},
                "by_subcategory": {},
                "by_task": {},
                "passes": 0,
                "extraction": {},
                "needed_extractor": 0,
                "failed_calls": 0,
                "not_asked": 0,
            }
        },
    },
    "agreement": {
        "command": "agreement",
        "paired": 0,
        "judge_only": 0,
        "human_only": 0,
        "judge_rows_not_ok": 0,
        "overall": {
            "n": 0,
            "mae": None,
            "pearson": None,
            "spearman": None,
            "kendall_tau_b": None,
            "fuzzy_accuracy": None,
            "strict_accuracy": None,
        },
        "by_model": {},
        "undefined": {},
    },
}


@pytest.mark.parametrize("command", sorted(DEGENERATE))
@pytest.mark.parametrize("models", ["one", "none"])
def test_every_report_builds_on_degenerate_results(command, models):
    assert set(DEGENERATE) == set(report_builders())
    results = json.loads(json.dumps(DEGENERATE[command]))
    if models == "none" and "models" in results:
        results["models"] = {}
    report = report_builders()[command](results)
    assert to_markdown(report) and to_html(report)


@pytest.mark.parametrize(
    "command, said",
    [
        ("judge", ["3 multiple-choice item(s) left to `mcq`"]),
        (
            "touchstone",
            ["3 multiple-choice item(s) left to `mcq`", "4 open question(s) cannot be scored: they have no image description."],
        ),
        (
            "hallucination",
            ["3 multiple-choice item(s) left to `mcq`", "4 open question(s) cannot be scored: they have no image description."],
        ),
        ("pairwise", ["3 multiple-choice item(s) left to `mcq`"]),
    ],
)
def test_every_judge_command_says_what_it_leaves_out_and_why(env, capsys, command, said):
    env.server.script("judge", '{"rating": 5, "reason": "ok"}\n5 5\nAnswer1')
    preds = env.predictions("m", {"c1": "x", "w1": "y"})
    extra = ["--anchor", env.predictions("anchor", {"c1": "z"}), "--bootstrap", "5"] if command == "pairwise" else []
    env.run(command, "--judge", "judge", *extra, "--predictions", preds, "--out", str(env.root / "o"))
    err = capsys.readouterr().err
    for line in said:
        assert f"{command}: {line}" in err
