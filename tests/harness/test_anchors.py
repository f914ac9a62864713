"""Anchor splits in the harness (pure Python): per-item results as each scoring mode defines them,
the choice of anchors, the estimate with its interval, the split file, and the CLI that scores only
a split's items and estimates the full score from them."""

import json
import math
import random

import pytest

from benchforge_harness import MemorySink
from benchforge_harness.anchors import (
    Split,
    best_anchors,
    choose_anchors,
    estimate,
    expected_error,
    probability,
    read_split,
    strata_of,
)
from benchforge_harness.cli import main
from benchforge_harness.io import InputError
from benchforge_harness.scoring import MODES, circular_eval
from tests.harness.test_scoring import MCQ, client, mcq_script  # noqa: F401 - the loopback client fixture


def simulated(n_items=1200, n_models=12, seed=7):
    """A release whose results follow a two-parameter item response model exactly."""
    rng = random.Random(seed)
    items = {f"i{n}": (math.exp(rng.gauss(0, 0.4)), rng.gauss(0, 1.2)) for n in range(n_items)}
    groups = {key: (f"task{n % 12}", f"category{n % 3}") for n, key in enumerate(items)}
    thetas = [rng.gauss(0, 1) for _ in range(n_models)]
    results = [{key: float(rng.random() < probability(t, a, b)) for key, (a, b) in items.items()} for t in thetas]
    return items, groups, thetas, results


def test_the_estimate_from_anchors_is_close_to_the_full_score_and_its_interval_holds_it():
    items, groups, thetas, results = simulated()
    kind, strata = strata_of(groups, 60)
    assert kind == "task"
    chosen = best_anchors(items, strata, 60, thetas[:-2], seed=1)
    assert len(chosen) == len(set(chosen)) == 60
    assert {strata[key] for key in chosen} == set(strata.values())  # every task has anchors
    split = Split("anchors", "mcq", 1.0, chosen, items)
    inside, errors = 0, []
    for observed in results:
        truth = sum(observed.values()) / len(observed)
        found = estimate(split, {key: observed[key] for key in chosen})
        assert found.anchors == 60 and found.missing == 0 and abs(found.value - truth) < 3 * found.sd
        errors.append(abs(found.value - truth))
        inside += found.low <= truth <= found.high
    # 60 of 1,200 items, every model off by well under a random sample's typical 0.05-0.06.
    assert sum(errors) / len(errors) < 0.05 and inside >= 9  # a 90% interval
    # The chosen sample is the one the model expects to predict best (of the candidates drawn).
    drawn = [choose_anchors({k: b for k, (_a, b) in items.items()}, strata, 60, seed=f"1:{n}") for n in range(30)]
    assert expected_error(chosen, items, thetas[:-2]) == min(expected_error(d, items, thetas[:-2]) for d in drawn)


def test_a_perfect_score_stays_finite_and_bad_results_are_refused():
    items, groups, _thetas, _results = simulated(n_items=200)
    _kind, strata = strata_of(groups, 20)
    chosen = choose_anchors({k: b for k, (_a, b) in items.items()}, strata, 20, seed=3)
    split = Split("anchors", "pointwise", 10.0, chosen, items)
    perfect = estimate(split, dict.fromkeys(chosen, 1.0))
    assert 0.8 < perfect.value < 1 and perfect.high <= 1 and math.isfinite(perfect.theta)
    assert perfect.headline == pytest.approx(10 * perfect.value)  # on the mode's scale
    partial = estimate(split, dict.fromkeys(chosen[:10], 0.0))
    assert partial.anchors == 10 and partial.missing == 10
    with pytest.raises(InputError, match="none of the split's 20 anchors"):
        estimate(split, {"not-an-anchor": 1.0})
    with pytest.raises(InputError, match="from 0 to 1"):
        estimate(split, {chosen[0]: 7})


def test_the_split_file_round_trips_and_a_broken_one_says_why(tmp_path):
    items, groups, _thetas, _results = simulated(n_items=100)
    split = Split("mcq-anchors", "mcq", 1.0, list(items)[:5], items, interval_scale=1.3, about={"k": 5})
    path = tmp_path / "split.json"
    path.write_text(json.dumps(split.to_dict()), encoding="utf-8")
    again = read_split(path)
    assert again.anchors == split.anchors and again.interval_scale == 1.3 and again.about == {"k": 5}
    assert again.items["i3"] == pytest.approx(split.items["i3"], abs=1e-6)
    broken = split.to_dict() | {"anchors": ["nope"]}
    path.write_text(json.dumps(broken), encoding="utf-8")
    with pytest.raises(InputError, match="anchor 'nope' has no item parameters"):
        read_split(path)
    path.write_text(json.dumps({"format": "something else"}), encoding="utf-8")
    with pytest.raises(InputError, match="not an anchor split"):
        read_split(path)


def test_each_modes_per_item_result_is_what_its_headline_counts(client, fake_llm):  # noqa: F811
    # CircularEval: read again from the run's sink rows, the outcomes the run decided.
    fake_llm.script("a", mcq_script({"Which fruit?", "What colour?"}))
    sink = MemorySink()
    run = circular_eval(client, MCQ, models=["a"], sink=sink)
    found = MODES["mcq"].item_results(sink.rows, MCQ, "a")
    assert found == {"q1": (1.0, "solved"), "q2": (1.0, "solved"), "q3": (0.0, "failed")}
    assert sum(v for v, _ in found.values()) / len(found) == run.results["models"]["a"]["circular"]
    # Pairwise: a win counts 1, a tie or a loss 0 (the win rate counts wins); an unread vote is left out.
    items = [{"id": str(n), "question": "Describe it."} for n in range(4)]
    votes = {"0": ("Answer2", "Answer1"), "1": ("Answer1", "Answer2"), "2": ("Answer2", "Answer2"), "3": ("Answer2", None)}
    rows = {
        f"m\t{n}\t{order}": {"status": "ok", "vote": vote}
        for n, pair in votes.items()
        for order, vote in zip((1, 2), pair)
        if vote
    }
    assert MODES["pairwise"].item_results(rows, items, "m") == {"0": (1.0, "win"), "1": (0.0, "lose"), "2": (0.0, "tie")}
    # Pointwise: the grade out of 10.
    graded = [{"id": "p", "question": "Describe it.", "reference_answer": "A pear."}]
    assert MODES["pointwise"].item_results({"m\tp": {"status": "ok", "rating": 7}}, graded, "m") == {"p": (0.7, "7/10")}


def test_the_cli_scores_only_the_splits_items_and_estimates_the_full_score(client, fake_llm, tmp_path, monkeypatch, capsys):  # noqa: F811
    release = tmp_path / "release"
    (release / "splits").mkdir(parents=True)
    (release / "items.jsonl").write_text("".join(json.dumps(item) + "\n" for item in MCQ), encoding="utf-8")
    items = {"q1": (1.0, -1.0), "q2": (1.0, 0.0), "q3": (1.2, 1.0)}
    split = Split("mcq-anchors", "mcq", 1.0, ["q1", "q3"], items)
    (release / "splits" / "mcq-anchors.json").write_text(json.dumps(split.to_dict()), encoding="utf-8")
    (tmp_path / "models.toml").write_text(
        f'[models.a]\nprovider = "openai"\nbase_url = "{fake_llm.base_url("openai")}"\nmodel = "a"\n'
        'api_key_env = "HARNESS_TEST_KEY"\nmax_retries = 0\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("HARNESS_TEST_KEY", "x")
    monkeypatch.chdir(tmp_path)
    fake_llm.script("a", mcq_script({"Which fruit?"}))
    out = tmp_path / "results" / "mcq-anchors"
    code = main(["mcq", "--release", str(release), "--split", "mcq-anchors", "--model", "a", "--out", str(out), "--no-cache"])
    assert code == 0
    asked = {q for r in fake_llm.requests("a") for q in ("Which fruit?", "What colour?", "Which shape?") if q in json.dumps(r)}
    assert asked == {"Which fruit?", "Which shape?"}  # the anchors only
    capsys.readouterr()
    assert main(["estimate", "--release", str(release), "--split", "mcq-anchors", "--results", str(out), "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    expected = estimate(split, {"q1": 1.0, "q3": 0.0})
    assert found["estimate"] == pytest.approx(expected.value) and found["anchors"] == 2 and found["model"] == "a"
    assert main(["estimate", "--release", str(release), "--split", "nope", "--results", str(out)]) == 2
    assert "splits/nope.json: file not found" in capsys.readouterr().err
