"""A model call that fails for good is not a wrong answer: in a QC run it leaves the item undecided
for that model (reported, out of the accuracy, resumable) and is never the reason an item is
flagged or passed; the accuracy and the flags on the rest equal a run without the failures."""

import re

import pytest

from jobs import services as jobs
from jobs.models import Job
from qc import selectors
from qc.models import QCItem
from qc.services import start_run
from tests.fakes.llm_server import Fault
from tests.qc.conftest import knower, make_mcq_items, prompt_of

pytestmark = pytest.mark.django_db(transaction=True)

KNOWN = {"v1": {0, 1}, "v2": {1, 2}}
ITEMS = 6


def failing_on(items: set[int], model_reply):
    def reply(body):
        n = int(re.search(r"Question (\d+):", prompt_of(body)).group(1))
        return Fault.server_error(500) if n in items else model_reply(body)

    return reply


def flags(run) -> dict[int, bool | None]:
    """Item number -> flagged, or None while undecided."""
    return {
        int(e.item.external_id[1:]): (e.flagged if e.done else None)
        for e in QCItem.objects.filter(run=run).select_related("item")
    }


def test_failed_calls_leave_items_undecided_and_the_rest_as_without_them(declare, fake_llm, benchmark, researcher):
    declare({name: {"vision": True} for name in KNOWN})
    fake_llm.script("v1", failing_on({0, 3}, knower(KNOWN["v1"])))
    fake_llm.script("v2", knower(KNOWN["v2"]))
    make_mcq_items(benchmark, researcher, ITEMS, images=True)

    run = start_run(benchmark, user=researcher, filter="all_fail", models=list(KNOWN), early_stop=False)

    job = run.jobs.get()
    assert job.status == Job.Status.FAILED and "still undecided, or with model calls that failed (v1)" in job.message
    # Without the failures: flagged {3, 4, 5} (nobody solves them), v1 solves 0 and 1.
    # With them: 0 and 3 are open for v1 (v2 fails both), so undecided, never flagged nor passed.
    assert flags(run) == {0: None, 1: False, 2: False, 3: None, 4: True, 5: True}
    v1 = selectors.report(run)["models"]["v1"]
    assert v1["undecided"] == 2 and v1["decided"] == 4 and v1["failed_calls"] == 2 * 4  # every rotation asked (no early stop)
    assert v1["circular"] == 0.25  # 1 of the 4 decided items (1, 2, 4, 5), as without the failures
    assert v1["vanilla"] == 0.25
    assert selectors.report(run)["models"]["v2"]["undecided"] == 0

    fake_llm.script("v1", knower(KNOWN["v1"]))  # the endpoint is back: resume
    jobs.run_now(jobs.resume(job, user=researcher))

    assert run.jobs.get().status == Job.Status.SUCCEEDED
    assert flags(run) == {0: False, 1: False, 2: False, 3: True, 4: True, 5: True}
    v1 = selectors.report(run)["models"]["v1"]
    assert v1["undecided"] == 0 and v1["circular"] == round(2 / 6, 4)
