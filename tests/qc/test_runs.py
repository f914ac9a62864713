"""QC runs against the loopback LLM server through both SDKs: LLMs that know the answer without the
image (text-only), VLMs that all fail (all-fail), a model that always answers A; exactly the
expected items flagged, early stopping counted, every answer stored, and a run killed midway
resumed without a repeated request."""

import pytest

from annotation.models import Item, ItemRevision
from annotation.workflow import ACCEPTED, QC_FLAGGED
from benchforge.errors import DomainError, NotAllowed
from jobs import services as jobs
from jobs.models import Job
from llm.sink import JobSink
from qc import selectors, services
from qc.models import QCAnswer, QCItem
from tests.qc.conftest import has_image, knower, make_mcq_items

pytestmark = pytest.mark.django_db(transaction=True)


def by_number(run) -> dict[int, QCItem]:
    return {int(e.item.external_id[1:]): e for e in QCItem.objects.filter(run=run).select_related("item")}


@pytest.mark.parametrize("provider", ["openai", "zhipuai"])
def test_text_only_flags_what_llms_know_without_the_image(provider, declare, fake_llm, benchmark, researcher):
    declare({"k1": {}, "k2": {}, "always_a": {}}, provider=provider)
    fake_llm.script("k1", knower({0, 1, 2}))
    fake_llm.script("k2", knower({0, 1, 3}))
    fake_llm.script("always_a", "A")
    make_mcq_items(benchmark, researcher, 6, answer="B", images=True)

    before = services.estimate(benchmark, filter="text_only", models=["k1", "k2", "always_a"])
    assert before["items"] == 6 and before["calls_without_stopping"] == 72
    run = services.start_run(benchmark, user=researcher, filter="text_only", models=["k1", "k2", "always_a"])

    job = run.jobs.get()
    assert job.status == Job.Status.SUCCEEDED, job.message
    entries = by_number(run)
    assert {n for n, e in entries.items() if e.flagged} == {0, 1}
    assert entries[0].solved_by == ["k1", "k2"] and entries[0].not_asked == ["always_a"]
    assert entries[2].solved_by == ["k1"] and entries[2].failed_by == ["k2", "always_a"]
    assert entries[4].failed_by == ["k1", "k2"] and entries[4].not_asked == ["always_a"]
    # Text-only: no request carried an image.
    assert not any(has_image(body) for body in fake_llm.requests())
    # Early stopping: k1 and k2 answer 3 items x 4 passes and fail 3 at the first pass; always-A is
    # asked only the two items still open after them, and fails their first pass.
    assert len(fake_llm.requests("k1")) == len(fake_llm.requests("k2")) == 15
    assert len(fake_llm.requests("always_a")) == 2
    calls = selectors.report(run)["calls"]
    # Every count derived from the stored rows: one call per answer; 4 passes an item for every pair;
    # the left-out pairs are the models in an item's not_asked; the pairs asked lost what followed a
    # wrong pass.
    answers = QCAnswer.objects.filter(run=run)
    left_out = [(e.item_id, m) for e in entries.values() for m in e.not_asked]
    rows_of = {
        (e.item_id, m): answers.filter(item_id=e.item_id, model=m).count() for e in entries.values() for m in run.model_names
    }
    assert calls["made"] == answers.count() == 32
    assert calls["every_call"] == 4 * 6 * 3 == 72
    assert calls["qc_stop_pairs"] == len(left_out) == 4 and calls["qc_stop_saved_at_most"] == 4 * len(left_out)
    assert calls["after_a_wrong_pass"] == sum(4 - n for pair, n in rows_of.items() if pair not in left_out) == 24
    assert calls["read_by_rules"] == 32 and calls["read_by_extractor"] == calls["unread"] == calls["no_reply"] == 0
    # What the QC stop saved, against the same models without it: a left-out model answers on its own,
    # so a run of always_a alone on the items it was left out of asks what the stop saved (it fails
    # each on the first pass: the fewest the bounds allow). Not 40 (72 - 32: CircularEval's own stop
    # and every unasked pass counted as the QC stop's).
    alone = services.start_run(
        benchmark, user=researcher, filter="text_only", models=["always_a"], item_ids=[i for i, _ in left_out]
    )
    saved = QCAnswer.objects.filter(run=alone).count()
    assert saved == calls["qc_stop_saved_at_least"] == 4 and saved <= calls["qc_stop_saved_at_most"]
    assert job.done == job.total == 72  # calls not needed are recorded as skipped units
    # Flagged items moved to qc_flagged through the transition table, with a history row.
    flagged = Item.objects.filter(pk__in=[entries[0].item_id, entries[1].item_id])
    assert set(flagged.values_list("status", flat=True)) == {QC_FLAGGED}
    assert ItemRevision.objects.filter(item=entries[0].item, action="qc_flagged").exists()
    assert Item.objects.get(pk=entries[2].item_id).status == ACCEPTED
    # Every answer kept: pass, rotation, what was shown, the raw output, the letter and how it was read.
    answer = QCAnswer.objects.get(run=run, item=entries[0].item, model="k1", shift=2)
    assert answer.output == answer.letter == answer.shown_answer and answer.correct and answer.method == "heuristic"
    assert answer.options["A"] == "thing 0-2"


@pytest.mark.parametrize("provider", ["openai", "zhipuai"])
def test_all_fail_flags_items_no_vlm_solves_with_the_image(provider, declare, fake_llm, benchmark, researcher):
    declare({"v1": {"vision": True}, "v2": {"vision": True}}, provider=provider)
    fake_llm.script("v1", knower({0, 1}))
    fake_llm.script("v2", knower({1, 2}))
    make_mcq_items(benchmark, researcher, 5, images=True)

    run = services.start_run(benchmark, user=researcher, filter="all_fail", models=["v1", "v2"])

    assert run.jobs.get().status == Job.Status.SUCCEEDED
    entries = by_number(run)
    assert {n for n, e in entries.items() if e.flagged} == {3, 4}
    assert entries[0].solved_by == ["v1"] and entries[0].not_asked == ["v2"]  # settled: one solver is enough
    assert entries[2].solved_by == ["v2"] and entries[2].failed_by == ["v1"]
    assert all(has_image(body) for body in fake_llm.requests())
    assert entries[1].solved_by == ["v1"] and entries[1].not_asked == ["v2"]
    assert len(fake_llm.requests("v1")) == 8 + 3 and len(fake_llm.requests("v2")) == 4 + 1 + 1


def test_always_a_solves_nothing_under_circular_eval(declare, fake_llm, benchmark, researcher):
    declare({"always_a": {}, "k1": {}})
    fake_llm.script("always_a", "A")
    fake_llm.script("k1", knower(set(range(4)), {0: "A", 1: "B", 2: "A", 3: "C"}))
    make_mcq_items(benchmark, researcher, 4, answers=["A", "B", "A", "C"])

    run = services.start_run(benchmark, user=researcher, filter="text_only", models=["always_a", "k1"], early_stop=False)

    entries = by_number(run)
    assert all("always_a" in e.failed_by and "always_a" not in e.solved_by for e in entries.values())
    assert all(e.solved_by == ["k1"] for e in entries.values())
    # Without early stopping every pass of every model is asked.
    assert len(fake_llm.requests("always_a")) == len(fake_llm.requests("k1")) == 16
    numbers = selectors.report(run)["models"]["always_a"]
    assert numbers["vanilla"] == 0.5 and numbers["circular"] == 0.0  # right on the first pass of the two A items only


def test_open_items_are_judged_without_the_image(declare, fake_llm, benchmark, researcher, annotator):
    from annotation.services import import_external_items

    declare({"m1": {}, "m2": {}, "judge": {}})
    fake_llm.script("m1", "It is a red apple.")
    fake_llm.script("m2", lambda body: "No idea." if "second" in str(body) else "A red apple, surely.")
    fake_llm.script(
        "judge", lambda body: '{"rating": 3, "reason": "no"}' if "No idea" in str(body) else '{"rating": 9, "reason": "ok"}'
    )
    task = benchmark.tasks.first()
    specs = [
        {
            "task": task,
            "external_id": name,
            "question": f"The {name} question: what fruit is it?",
            "reference_answer": "A red apple.",
        }
        for name in ("first", "second")
    ]
    import_external_items(benchmark, specs, user=researcher)

    run = services.start_run(
        benchmark, user=researcher, filter="judged_text_only", models=["m1", "m2"], judge="judge", min_score=7
    )

    assert run.jobs.get().status == Job.Status.SUCCEEDED, run.jobs.get().message
    entries = {e.item.external_id: e for e in QCItem.objects.filter(run=run).select_related("item")}
    assert entries["first"].flagged and entries["first"].solved_by == ["m1", "m2"]
    assert not entries["second"].flagged and entries["second"].failed_by == ["m2"]
    answer = QCAnswer.objects.get(run=run, item=entries["second"].item, model="m2")
    assert answer.score == 3 and answer.output == "No idea." and not answer.correct


def test_a_run_killed_midway_resumes_without_repeating_a_request(declare, fake_llm, benchmark, researcher, monkeypatch):
    declare({"k1": {}, "k2": {}, "k3": {}})
    for name, known in (("k1", {0, 1, 2, 3}), ("k2", {0, 1, 4, 5}), ("k3", {2, 4, 6})):
        fake_llm.script(name, knower(known))
    make_mcq_items(benchmark, researcher, 8)
    real_flush, flushes = JobSink.flush, []

    def dying_flush(self):
        flushes.append(1)
        if len(flushes) == 3:
            raise RuntimeError("worker killed")
        real_flush(self)

    monkeypatch.setattr("llm.sink.FLUSH_ROWS", 3)
    monkeypatch.setattr(JobSink, "flush", dying_flush)
    run = services.start_run(benchmark, user=researcher, filter="text_only", models=["k1", "k2", "k3"])
    job = run.jobs.get()
    assert job.status == Job.Status.FAILED and "worker killed" in job.message
    asked_before = len(fake_llm.requests())
    monkeypatch.setattr(JobSink, "flush", real_flush)

    jobs.run_now(jobs.requeue(job))

    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED, job.message
    bodies = [str(b["messages"]) + b["model"] for b in fake_llm.requests()]
    assert len(bodies) == len(set(bodies)), "a request was sent twice"
    assert len(bodies) > asked_before
    # The same flags as an uninterrupted run.
    assert {n for n, e in by_number(run).items() if e.flagged} == {0, 1, 2, 4}


def test_a_run_split_in_parts_covers_every_item_once(declare, fake_llm, benchmark, researcher):
    declare({"k1": {}, "k2": {}})
    fake_llm.script("k1", knower({0, 1, 2}))
    fake_llm.script("k2", knower({1, 2, 3}))
    make_mcq_items(benchmark, researcher, 7)

    run = services.start_run(benchmark, user=researcher, filter="text_only", models=["k1", "k2"], parts=3)

    assert run.jobs.count() == 3 and all(j.status == Job.Status.SUCCEEDED for j in run.jobs.all())
    assert sorted(QCItem.objects.filter(run=run).values_list("part", flat=True)) == [0, 0, 0, 1, 1, 2, 2]
    assert {n for n, e in by_number(run).items() if e.flagged} == {1, 2}
    run.refresh_from_db()
    assert run.status == "finished"


def test_starting_a_run_is_checked_first(declare, fake_llm, benchmark, researcher, annotator):
    declare({"k1": {}, "textual": {"vision": False}})
    make_mcq_items(benchmark, researcher, 2, images=True)
    with pytest.raises(NotAllowed):
        services.start_run(benchmark, user=annotator, filter="text_only", models=["k1"])
    with pytest.raises(DomainError, match="vision = false"):
        services.start_run(benchmark, user=researcher, filter="all_fail", models=["textual"])
    with pytest.raises(DomainError, match="No LLM endpoint named 'nope'"):
        services.start_run(benchmark, user=researcher, filter="text_only", models=["nope"])
    with pytest.raises(DomainError, match="listed twice"):
        services.start_run(benchmark, user=researcher, filter="text_only", models=["k1", "k1"])
    with pytest.raises(DomainError, match="judge"):
        services.start_run(benchmark, user=researcher, filter="judged_text_only", models=["k1"])
    assert not fake_llm.requests()


def test_replies_the_rules_cannot_read_go_to_the_extractor(declare, fake_llm, benchmark, researcher):
    declare({"wordy": {}, "reader": {}})
    fake_llm.script("wordy", "Either A or C, hard to say.")
    fake_llm.script("reader", "Z")  # the extractor: none of the options
    make_mcq_items(benchmark, researcher, 2)

    run = services.start_run(benchmark, user=researcher, filter="text_only", models=["wordy"], extractor="reader")

    job = run.jobs.get()
    assert job.status == Job.Status.SUCCEEDED, job.message
    answers = list(QCAnswer.objects.filter(run=run))
    assert len(answers) == 2 and all(a.method == "extractor_none" and a.letter == "Z" and not a.correct for a in answers)
    assert len(fake_llm.requests("reader")) == 2
    report = selectors.report(run)
    assert report["calls"]["read_by_extractor"] == 2 and report["models"]["wordy"]["needed_extractor"] == 2
    assert report["calls"]["read_by_rules"] == report["calls"]["unread"] == 0
    assert job.total == 8 + 2 and job.done == job.total  # the extractor's calls are units too


def test_a_run_without_an_extractor_reads_nothing_by_one(declare, fake_llm, benchmark, researcher, client_for):
    declare({"wordy": {}, "plain": {}})
    fake_llm.script("wordy", "Either A or C, hard to say.")
    fake_llm.script("plain", "B")
    make_mcq_items(benchmark, researcher, 3)

    run = services.start_run(benchmark, user=researcher, filter="text_only", models=["wordy", "plain"], early_stop=False)

    assert run.jobs.get().status == Job.Status.SUCCEEDED
    calls = selectors.report(run)["calls"]
    methods = list(QCAnswer.objects.filter(run=run).values_list("method", flat=True))
    assert calls["read_by_extractor"] == 0  # "none: rules only": no answer was read by an extractor
    assert calls["unread"] == methods.count("unresolved") == 12 and calls["read_by_rules"] == methods.count("heuristic") == 12
    assert calls["made"] == calls["every_call"] == 24 and calls["qc_stop_pairs"] == calls["after_a_wrong_pass"] == 0
    page = client_for(researcher).get(f"/b/{benchmark.slug}/qc/runs/{run.number}/").content.decode()
    assert "by the LLM extractor: <b>0</b>" in page and "read by neither (counted wrong): 12" in page
    assert "This run has no extractor: rules only." in page


def test_the_estimate_counts_every_option_a_pass_shows(declare, benchmark, researcher):
    """Every pass of CircularEval shows all the item's options: an option past D costs tokens too
    (the estimate once paired the options with "ABCD" and dropped the rest)."""
    declare({"m": {"input_cost_per_mtok": 1.0, "output_cost_per_mtok": 1.0}})
    make_mcq_items(benchmark, researcher, 1)
    [item] = services.scope(benchmark, filter="text_only")

    def estimate_with(fifth: str) -> dict:
        item.choices = [*item.choices[:4], fifth]
        return services.estimate(benchmark, filter="text_only", models=["m"], items=[item])

    short, long = estimate_with("E"), estimate_with("a much longer fifth option " * 20)
    assert short["calls_without_stopping"] == long["calls_without_stopping"] == 5  # one pass per option
    assert long["prompt_tokens"] - short["prompt_tokens"] >= 5 * 100  # ~130 more tokens in each of 5 passes


@pytest.mark.parametrize("threshold", ["half", "", [0.5]])
def test_a_threshold_that_is_not_a_number_is_refused_with_a_message(declare, fake_llm, benchmark, researcher, threshold):
    declare({"m": {}})
    make_mcq_items(benchmark, researcher, 1)
    with pytest.raises(DomainError, match="The threshold is a share of the models"):
        services.start_run(benchmark, user=researcher, filter="text_only", models=["m"], threshold=threshold)


def test_a_judged_run_estimates_what_the_registry_says_it_asks(declare, benchmark, researcher):
    """The judged filter's estimate is the registry's: one answer per model and item, and one grade
    of it by the judge, the judge on a line of its own."""
    from annotation.services import import_external_items
    from benchforge_harness.scoring import MODES

    declare({"a": {}, "b": {}, "judge": {}})
    task = benchmark.tasks.first()
    specs = [{"task": task, "external_id": f"o{i}", "question": f"Open {i}?", "reference_answer": "yes"} for i in range(3)]
    import_external_items(benchmark, specs, user=researcher)
    summary = services.estimate(benchmark, filter="judged_text_only", models=["a", "b"], judge="judge")
    mode = MODES["judged_text_only"]
    assert summary["items"] == 3
    assert summary["per_model"]["a"]["calls"] == summary["per_model"]["b"]["calls"] == 3 * mode.passes(None)
    assert summary["per_model"]["judge (judge)"]["calls"] == 2 * 3 * mode.judge_calls
    assert summary["calls_without_stopping"] == 12
