"""A QC run's state is its jobs' state (Failed with the reason and Resume) in its heading, the runs
list and the API `status`; Resume asks every failed call again, also on items other models had
already settled (early stop off); a run never reads finished with failed calls left, and its usage
counts the calls failed after the last run, not the sum over runs."""

import re

import pytest

from jobs import services as jobs
from jobs.models import Job
from qc import selectors
from qc.services import start_run
from tests.qc.conftest import knower, make_mcq_items
from tests.qc.test_failed_calls import KNOWN, failing_on, flags

pytestmark = pytest.mark.django_db(transaction=True)


def _badge(html: str, element_id: str) -> str:
    return re.search(rf'id="{element_id}">([^<]*)<', html).group(1).strip()


def test_a_run_whose_job_failed_reads_failed_with_its_reason_everywhere(
    declare, fake_llm, benchmark, researcher, client_for, api_for
):
    declare({name: {"vision": True} for name in KNOWN})
    fake_llm.script("v1", failing_on({0, 3}, knower(KNOWN["v1"])))
    fake_llm.script("v2", knower(KNOWN["v2"]))
    make_mcq_items(benchmark, researcher, 6, images=True)
    run = start_run(benchmark, user=researcher, filter="all_fail", models=list(KNOWN), early_stop=False)
    job = run.jobs.get()
    assert job.status == Job.Status.FAILED

    page = client_for(researcher).get(f"/b/{benchmark.slug}/qc/runs/{run.number}/").content.decode()
    assert _badge(page, "qc-state") == "Failed"
    assert 'id="qc-reason"' in page and "model calls that failed (v1)" in page and 'id="qc-resume"' in page
    listing = client_for(researcher).get(f"/b/{benchmark.slug}/qc/").content.decode()
    row = re.search(rf'<tr data-run="{run.number}">.*?</tr>', listing, re.S).group(0)
    assert "Failed" in row and "Running" not in row
    api = api_for(researcher).get(f"/api/v1/benchmarks/{benchmark.slug}/qc/runs/").json()
    runs = api["results"] if isinstance(api, dict) else api
    mine = next(r for r in runs if r["number"] == run.number)
    assert mine["status"] == "failed" and "(v1)" in mine["state_reason"]


def test_resume_asks_failed_calls_again_on_settled_items_and_usage_counts_what_is_failed_now(
    declare, fake_llm, benchmark, researcher, client_for, api_for
):
    declare({name: {"vision": True} for name in KNOWN})
    # v2 solves items 1 and 2, which settles them (all-fail flags what nobody solves) whatever v1 says.
    fake_llm.script("v1", failing_on({1, 2}, knower(KNOWN["v1"])))
    fake_llm.script("v2", knower(KNOWN["v2"]))
    make_mcq_items(benchmark, researcher, 6, images=True)
    run = start_run(benchmark, user=researcher, filter="all_fail", models=list(KNOWN), early_stop=False)

    job = run.jobs.get()
    assert job.status == Job.Status.FAILED, "a run with failed calls left must not read succeeded"
    assert selectors.report(run)["models"]["v1"]["failed_calls"] == 8
    assert selectors.run_usage(run)["total"]["failures"] == 8
    run.refresh_from_db()
    assert run.status != "finished"

    fake_llm.script("v1", knower(KNOWN["v1"]))  # the endpoint is back
    asked_before = len(fake_llm.requests())
    jobs.run_now(jobs.resume(job, user=researcher))

    assert run.jobs.get().status == Job.Status.SUCCEEDED
    assert len(fake_llm.requests()) - asked_before == 8  # exactly the failed calls, asked again
    v1 = selectors.report(run)["models"]["v1"]
    assert v1["failed_calls"] == 0 and v1["undecided"] == 0
    assert v1["circular"] == round(2 / 6, 4)  # as in a clean run: v1 solves 0 and 1
    assert flags(run) == {0: False, 1: False, 2: False, 3: True, 4: True, 5: True}
    assert selectors.run_usage(run)["total"]["failures"] == 0
    run.refresh_from_db()
    assert run.status == "finished"
    api = api_for(researcher).get(f"/api/v1/benchmarks/{benchmark.slug}/qc/runs/{run.number}/").json()
    assert api["run"]["status"] == "finished"


def test_answers_from_the_cache_are_in_the_ledger_as_they_are_served(researcher):
    from llm.ledger import Meter
    from llm.models import Usage

    job = jobs.create_job("qc_run", params={})
    Meter().count((job.pk, 1), "e1", {"cache_hits": 1})  # and then the worker is killed: nothing settles
    assert Usage.objects.get(job_id=job.pk, endpoint="e1").cache_hits == 1
