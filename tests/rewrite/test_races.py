"""Rewrite verification under simultaneous requests (the race kit, tests/races.py; Postgres only):
one rewrite approved twice, approved and rejected at once, and several rewrites of one seed approved
at once (each approved rewrite is one item, each seed moves once), and a batch started twice at once
(each seed is sent once). Invariants asked in SQL."""

from functools import partial

import pytest

from rewrite.models import Rewrite, RewriteBatch
from tests.races import broken, race, rows, server_errors
from tests.rewrite.conftest import QUESTIONS, five, question_of

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("postgres")]
URL = "/api/v1/benchmarks/demo/rewrite/rewrites/{}/{}/"


def test_approvals_and_rejections_at_once_give_one_item_per_approved_rewrite(
    make_seed, benchmark, researcher, reviewer, make_user, api_for, zh_template
):
    other = make_user("reviewer", "vera", benchmarks=[benchmark])
    batch = RewriteBatch.objects.create(
        benchmark=benchmark, number=1, endpoint="glm", model="glm-4", template_version=zh_template, created_by=researcher
    )
    calls = []
    for question in QUESTIONS:
        seed = make_seed(question)
        texts = [f"{question} 改写{k}" for k in range(4)]
        first, second, third, fourth = [
            Rewrite.objects.create(seed=seed, batch=batch, position=k, text=t) for k, t in enumerate(texts)
        ]
        rita, vera = (api_for(reviewer), api_for(reviewer), api_for(reviewer)), (api_for(other), api_for(other))
        calls += [
            # One rewrite approved by two verifiers at once, and twice by one of them (a double click).
            partial(rita[0].post, URL.format(first.pk, "approve")),
            partial(vera[0].post, URL.format(first.pk, "approve")),
            partial(rita[1].post, URL.format(first.pk, "approve")),
            # Approved and rejected at once.
            partial(rita[2].post, URL.format(second.pk, "reject"), {"reason": "not_fluent"}, format="json"),
            partial(vera[1].post, URL.format(second.pk, "approve")),
            # Two more rewrites of the same seed approved at once.
            partial(api_for(reviewer).post, URL.format(third.pk, "approve")),
            partial(api_for(other).post, URL.format(fourth.pk, "approve")),
        ]
    results = race(calls)
    assert server_errors(results) == []
    assert {r.status for r in results} <= {200, 409}, [r.body for r in results if r.status not in (200, 409)]
    assert broken() == {}
    assert rows("SELECT count(*) FROM annotation_item WHERE seed_id IS NULL AND status <> 'rewritten'") == [(0,)]


def test_a_batch_started_twice_at_once_sends_each_seed_once(declare, fake_llm, seeds, researcher, api_for):
    declare()
    fake_llm.script("glm-4", lambda body: five(question_of(body)))
    body = {"endpoint": "glm"}
    results = race(
        [partial(api_for(researcher).post, "/api/v1/benchmarks/demo/rewrite/batches/", body, format="json") for _ in range(3)]
    )
    assert server_errors(results) == []
    # One batch takes the seeds; the others are told none is left (the batch numbers never collide):
    # 409 for a request that waited on the lock, 400 for one whose eligibility check ran only after
    # the winner had committed (no eligible seed is left: the same answer a later click gets).
    statuses = sorted(r.status for r in results)
    assert statuses[0] == 201 and set(statuses[1:]) <= {400, 409}, [r.body for r in results]
    assert all("No seed to rewrite" in r.json.get("detail", "") for r in results if r.status != 201), [r.body for r in results]
    assert rows("SELECT count(*), count(DISTINCT item_id) FROM rewrite_batchseed") == [(len(seeds), len(seeds))]
    assert len(fake_llm.requests("glm-4")) == len(seeds)
    assert broken() == {}
