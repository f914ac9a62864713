"""One usage and cost ledger for every job that calls a model: a QC run, a rewrite batch and a
leaderboard score each show what they spent, read from the ledger, and it is exactly what the
loopback server received and answered (requests, prompt and completion tokens), through the real
openai and zai-sdk SDKs, also when a job died after paying for replies it never recorded and was
resumed.

How cached replies count: a request is billed to the job run that sent it, when it is sent, and its
tokens once its reply is cached. A call answered from the response cache is a cache hit, never billed
again, whoever paid for it (a resumed run that finds what its killed run paid for shows it as a cache
hit: the killed run was billed for it)."""

import pytest
from django.urls import reverse

from exports import leaderboard
from exports import services as exports
from exports.models import Score
from jobs import services as jobs
from jobs.models import Job
from llm.sink import JobSink
from qc import selectors as qc_selectors
from qc import services as qc
from rewrite import selectors as rewrite_selectors
from rewrite import services as rewrite
from rewrite.services import batches as rewrite_batches
from tests.fakes.llm_server import prompt_tokens
from tests.ledger.conftest import PRICES
from tests.qc.conftest import knower, make_mcq_items
from tests.rewrite.conftest import five, question_of

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_image_indexes")]


def served(fake_llm, model: str, reply) -> dict:
    """What the loopback server received for `model` and billed in its replies (`reply(body)` is
    the script that answered each request), priced as declared."""
    bodies = fake_llm.requests(model)
    prompt = sum(prompt_tokens(body) for body in bodies)
    completion = sum(len(reply(body).split()) for body in bodies)
    return {
        "requests": len(bodies),
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "cost": round((prompt * PRICES["input_cost_per_mtok"] + completion * PRICES["output_cost_per_mtok"]) / 1e6, 6),
    }


def billed(usage: dict) -> dict:
    return {key: usage[key] for key in ("requests", "prompt_tokens", "completion_tokens", "cost")}


def dying_once(monkeypatch, cls, name: str, *, at: int):
    """cls.name raises (a worker dying) on its at-th call, after the replies before it were paid:
    what a sink held in memory is lost with the worker."""
    real, calls = getattr(cls, name), []

    def dying(self, *args, **kwargs):
        if isinstance(self, JobSink) and not self.pending:
            return real(self, *args, **kwargs)  # nothing held: nothing to lose
        calls.append(1)
        if len(calls) == at:
            if isinstance(self, JobSink):
                self.pending = []
            raise RuntimeError("worker killed")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(cls, name, dying)


def resumed(job: Job) -> Job:
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and "worker killed" in job.message, job.message
    return jobs.run_now(jobs.requeue(job))


def test_a_qc_run_shows_what_the_server_received_also_after_a_resume(
    declare, fake_llm, benchmark, researcher, client_for, api_for, monkeypatch
):
    declare(k1="openai", k2="openai")
    scripts = {"k1": knower({0, 1, 2}), "k2": knower({1, 3})}
    for name, script in scripts.items():
        fake_llm.script(name, script)
    make_mcq_items(benchmark, researcher, 6)
    monkeypatch.setattr("llm.sink.FLUSH_ROWS", 3)
    dying_once(monkeypatch, JobSink, "flush", at=3)  # replies paid for, not all recorded

    run = qc.start_run(benchmark, user=researcher, filter="text_only", models=["k1", "k2"], early_stop=False)
    job = resumed(run.jobs.get())

    assert job.status == Job.Status.SUCCEEDED, job.message
    usage = qc_selectors.run_usage(run)
    for name in ("k1", "k2"):
        assert billed(usage["endpoints"][name]) == served(fake_llm, name, scripts[name])
    assert usage["total"]["requests"] == len(fake_llm.requests()) == 2 * 6 * 4  # no pass was asked twice
    assert usage["total"]["cache_hits"] > 0  # the killed run's unrecorded replies, found again, not billed again
    page = client_for(researcher).get(reverse("qc-run", args=[benchmark.slug, run.number])).content.decode()
    line = page.split('id="qc-usage">')[1].split("</p>")[0]
    assert f"<b>{usage['total']['requests']}</b>" in line and f"cost {usage['total']['cost']}" in line
    api = api_for(researcher).get(f"/api/v1/benchmarks/{benchmark.slug}/qc/runs/{run.number}/").json()
    assert api["run"]["usage"]["total"] == usage["total"]


def test_a_rewrite_batch_shows_what_the_server_received_also_after_a_resume(
    declare, fake_llm, benchmark, seeds, zh_template, researcher, monkeypatch
):
    declare(glm="zhipuai")

    def reply(body):
        return five(question_of(body))

    fake_llm.script("glm", reply)
    dying_once(monkeypatch, rewrite_batches._GroupWriter, "flush", at=1)  # the first group dies unrecorded

    batch = rewrite.start_batch(benchmark, user=researcher, template_version=zh_template, endpoint="glm")
    job = resumed(batch.job)

    assert job.status == Job.Status.SUCCEEDED, job.message
    batch.refresh_from_db()
    server = served(fake_llm, "glm", reply)
    assert server["requests"] == 5  # each seed asked once: the resumed run found the replies in the cache
    assert billed(batch.usage) == server
    overview = rewrite_selectors.batch_overview(batch)["usage"]
    assert billed(overview) == server and overview["answered_from_cache"] > 0
    assert job.result["requests"] == 5 and job.result["cost"] == server["cost"]


def test_a_leaderboard_score_shows_its_estimate_and_what_the_server_received_after_a_resume(
    declare, fake_llm, built, researcher, api_for, client_for, monkeypatch
):
    declare(vlm="openai", judge="zhipuai")

    def answer(body):
        return "Three red apples on the table."

    def grade(body):
        return '{"rating": 8, "reason": "close to the reference"}'

    fake_llm.script("vlm", answer)
    fake_llm.script("judge", grade)
    release = exports.freeze(built(), user=researcher)
    monkeypatch.setattr("llm.sink.FLUSH_ROWS", 4)
    dying_once(monkeypatch, JobSink, "flush", at=2)

    score = leaderboard.submit(release, user=researcher, label="vlm", method="pointwise", endpoint="vlm", judge="judge")
    score.refresh_from_db()
    assert score.status == Score.Status.FAILED
    estimate = score.job.params["estimate"]
    job = resumed(score.job)

    assert job.status == Job.Status.SUCCEEDED, job.message
    score.refresh_from_db()
    assert score.status == Score.Status.DONE and score.results["judged"] == 18
    spent = leaderboard.spending(score)["usage"]
    assert billed(spent["endpoints"]["vlm"]) == served(fake_llm, "vlm", answer)
    assert billed(spent["endpoints"]["judge"]) == served(fake_llm, "judge", grade)
    assert len(fake_llm.requests("vlm")) == len(fake_llm.requests("judge")) == 18  # none asked twice
    # The estimate counted every call before any was made: one answer and one grade per open question.
    assert estimate["calls"] == 36 and estimate["per_endpoint"]["vlm"]["calls"] == 18 and estimate["cost"] > 0
    listed = api_for(researcher).get(f"/api/v1/benchmarks/{release.benchmark.slug}/releases/1.0.0/leaderboard/").json()
    assert listed[0]["usage"] == spent and listed[0]["estimate"] == estimate
    card = client_for(researcher).get(f"/b/{release.benchmark.slug}/releases/1.0.0/leaderboard/{score.pk}/").content.decode()
    shown = card.split('id="score-usage">')[1].split("</dd>")[0]
    assert f"{spent['total']['requests']} requests" in shown and f"cost {spent['total']['cost']}" in shown
    assert f"{estimate['calls']} calls" in card.split('id="score-estimate">')[1].split("</dd>")[0]
