"""QC under simultaneous requests (the race kit, tests/races.py; Postgres only): keep and remove of
one flagged item at once leave the item where the decision that stands says, a removed item never
goes into a release (nor into a freeze racing the removal), and runs started at once are numbered."""

from functools import partial

import pytest

from annotation.services import change_status_many
from annotation.workflow import QC_FLAGGED
from qc.models import QCItem, QCRun
from qc.services import decide
from tests.qc.conftest import knower, make_mcq_items
from tests.races import broken, race, server_errors

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("postgres")]
ITEMS = 16


@pytest.fixture
def flagged_run(benchmark, researcher):
    """A finished run that flagged ITEMS multiple-choice items (written as the run's job leaves them)."""
    items = make_mcq_items(benchmark, researcher, ITEMS)
    run = QCRun.objects.create(
        benchmark=benchmark, number=1, filter=QCRun.Filter.TEXT_ONLY, model_names=["a", "b"], status="finished"
    )
    QCItem.objects.bulk_create(QCItem(run=run, item=i, done=True, flagged=True, solved_by=["a", "b"]) for i in items)
    change_status_many(items, QC_FLAGGED, user=researcher, action="qc_flagged", note="QC run 1")
    return run, items


def test_keep_and_remove_at_once_leave_the_item_as_the_standing_decision_says(
    flagged_run, benchmark, researcher, make_user, api_for
):
    run, items = flagged_run
    other = make_user("researcher", "rhea")
    calls = []
    for item in items:
        url = f"/api/v1/benchmarks/demo/qc/runs/{run.number}/items/{item.pk}/decision/"
        for who, decision in ((researcher, "keep"), (other, "remove")):
            calls.append(partial(api_for(who).post, url, {"decision": decision}, format="json"))
    results = race(calls)
    assert server_errors(results) == []
    assert {r.status for r in results} == {200}
    assert broken() == {}
    # A removed item stays out of the next release (its scope takes qc_passed items, not flagged ones).
    removed = {e.item_id for e in QCItem.objects.filter(run=run, decision="remove")}
    kept = {e.item_id for e in QCItem.objects.filter(run=run, decision="keep")}
    assert removed | kept == {i.pk for i in items}
    from exports import services as releases

    release = releases.create_release(benchmark, user=researcher, version="1.0.0", statuses=["qc_passed"])
    release = releases.start_build(release, user=researcher)
    assert set(release.items.values_list("item_id", flat=True)) == kept
    releases.freeze(release, user=researcher)
    assert broken() == {}


def test_a_freeze_racing_qc_removals_never_freezes_a_removed_item_in(flagged_run, benchmark, researcher, make_user, api_for):
    from exports import services as releases

    run, items = flagged_run
    for item in items:
        decide(QCItem.objects.get(run=run, item=item), user=researcher, decision="keep")
    release = releases.start_build(releases.create_release(benchmark, user=researcher, version="1.0.0"), user=researcher)
    assert release.items.count() == ITEMS
    other = make_user("researcher", "rhea")
    calls = [partial(api_for(researcher).post, f"/api/v1/benchmarks/demo/releases/{release.version}/freeze/")]
    for item in items[::3]:
        url = f"/api/v1/benchmarks/demo/qc/runs/{run.number}/items/{item.pk}/decision/"
        calls.append(partial(api_for(other).post, url, {"decision": "remove", "note": "found later"}, format="json"))
    results = race(calls)
    assert server_errors(results) == []
    freeze, removals = results[0], results[1:]
    release.refresh_from_db()
    if freeze.status == 200:  # it went first: the removals came too late (released items are not decided: a state conflict)
        assert release.status == "frozen" and {r.status for r in removals} == {409}
    else:  # a removal went first: the freeze is refused, naming what changed
        assert freeze.status == 409 and "build it again before freezing" in freeze.json["detail"]
        assert release.status == "built" and {r.status for r in removals} <= {200, 409}
    assert broken() == {}


def test_runs_started_at_once_each_get_their_own_number(declare, fake_llm, benchmark, researcher, api_for):
    declare({"k1": {}, "k2": {}})
    fake_llm.script("k1", knower({0}))
    fake_llm.script("k2", knower({0}))
    make_mcq_items(benchmark, researcher, 3)
    body = {"filter": "text_only", "models": ["k1", "k2"]}
    results = race([partial(api_for(researcher).post, "/api/v1/benchmarks/demo/qc/runs/", body, format="json") for _ in range(3)])
    assert server_errors(results) == []
    assert sorted(r.status for r in results) == [201, 201, 201], [r.body for r in results]
    assert sorted(r.json["number"] for r in results) == [1, 2, 3]
    assert broken() == {}
