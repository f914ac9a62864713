"""QC decisions survive a re-run: an item a researcher kept is not flagged again by running the
filter once more; the new verdict is recorded beside the decision and the adjudication list says
"kept earlier"."""

import pytest
from django.urls import reverse

from annotation.models import Item
from annotation.workflow import QC_FLAGGED, QC_PASSED
from qc import services
from qc.models import QCItem, QCRun
from tests.qc.conftest import knower, make_mcq_items

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_rerun_records_its_verdict_beside_an_earlier_keep(declare, fake_llm, benchmark, researcher, client_for):
    declare({"k1": {}, "k2": {}})
    fake_llm.script("k1", knower({0, 1}))
    fake_llm.script("k2", knower({0, 1}))
    items = make_mcq_items(benchmark, researcher, 3)
    first = services.start_run(benchmark, user=researcher, filter="text_only", models=["k1", "k2"])
    kept = QCItem.objects.get(run=first, item=items[0])
    assert kept.flagged and QCItem.objects.get(run=first, item=items[1]).flagged
    services.decide(kept, user=researcher, decision="keep", note="the text alone is not enough")
    assert Item.objects.get(pk=items[0].pk).status == QC_PASSED

    second = services.start_run(
        benchmark, user=researcher, filter="text_only", models=["k1", "k2"], item_ids=[items[0].pk, items[2].pk]
    )

    again = QCItem.objects.get(run=second, item=items[0])
    assert again.done and again.flagged and again.decision == ""  # the new verdict, recorded
    assert Item.objects.get(pk=items[0].pk).status == QC_PASSED  # the decision stands
    assert Item.objects.get(pk=items[1].pk).status == QC_FLAGGED
    page = client_for(researcher).get(reverse("qc-flagged", args=[benchmark.slug, second.number])).content.decode()
    row = page.split(f'data-item="{items[0].pk}"')[1].split("</tr>")[0]
    assert f"kept earlier (run {first.number})" in row


def test_a_fully_cached_rerun_shows_no_request_sent(declare, fake_llm, benchmark, researcher, client_for):
    declare({"k1": {"vision": True, "input_cost_per_mtok": 1.0, "output_cost_per_mtok": 2.0}})
    fake_llm.script("k1", knower({0, 1}))  # solves both: nothing flagged, both stay in scope
    make_mcq_items(benchmark, researcher, 2, images=True)
    first = services.start_run(benchmark, user=researcher, filter="all_fail", models=["k1"], early_stop=False)
    sent = len(fake_llm.requests("k1"))
    first.refresh_from_db()
    usage = services_report(first)["usage"]["total"]
    assert usage["requests"] == sent == 8 and usage["cache_hits"] == 0 and usage["cost"] > 0

    second = services.start_run(benchmark, user=researcher, filter="all_fail", models=["k1"], early_stop=False)

    assert len(fake_llm.requests("k1")) == sent  # every answer came from the response cache
    second.refresh_from_db()
    report = services_report(second)
    assert report["calls"]["made"] == 8  # passes asked
    assert report["usage"]["total"]["requests"] == 0 and report["usage"]["total"]["cache_hits"] == 8
    assert report["usage"]["total"]["cost"] == 0
    page = client_for(researcher).get(reverse("qc-run", args=[benchmark.slug, second.number])).content.decode()
    usage_line = page.split('id="qc-usage">')[1].split("</p>")[0]
    assert "Requests sent to the endpoints: <b>0</b>" in usage_line and "response cache: <b>8</b>" in usage_line
    assert "model calls made" not in page


def services_report(run):
    from qc import selectors

    return selectors.report(run)


def test_a_cleaned_export_combines_every_finished_run(declare, fake_llm, benchmark, researcher, client_for):
    import json

    declare({"k1": {}, "k2": {}, "v1": {"vision": True}})
    fake_llm.script("k1", knower({0, 1}))
    fake_llm.script("k2", knower({0, 1}))
    fake_llm.script("v1", knower({3}))
    items = make_mcq_items(benchmark, researcher, 4, images=True)
    text_only = services.start_run(benchmark, user=researcher, filter="text_only", models=["k1", "k2"])
    services.decide(QCItem.objects.get(run=text_only, item=items[0]), user=researcher, decision="keep")
    services.decide(QCItem.objects.get(run=text_only, item=items[1]), user=researcher, decision="remove")
    all_fail = services.start_run(
        benchmark, user=researcher, filter="all_fail", models=["v1"], item_ids=[items[0].pk, items[2].pk, items[3].pk]
    )
    assert {e.item_id for e in QCItem.objects.filter(run=all_fail, flagged=True)} == {items[0].pk, items[2].pk}

    client = client_for(researcher)
    url = reverse("qc-export-jsonl", args=[benchmark.slug, all_fail.number])
    combined = b"".join(client.get(url + "?combine=all").streaming_content).decode().splitlines()
    assert {json.loads(line)["id"] for line in combined} == {"q0", "q3"}
    removed_url = reverse("qc-export-removed", args=[benchmark.slug, all_fail.number])
    left_out = {row["item"]: row for row in json.loads(client.get(removed_url + "?combine=all").content)}
    assert set(left_out) == {items[1].pk, items[2].pk}
    assert left_out[items[1].pk]["decision"] == "remove" and left_out[items[1].pk]["run"] == text_only.number
    assert left_out[items[2].pk]["reason"] == "flagged by the filter and not decided yet"

    QCRun.objects.filter(benchmark=benchmark).update(status=QCRun.Status.RUNNING)  # none finished: a state conflict
    early = client.get(url + "?combine=all")
    assert (
        early.status_code == 409
        and early.content.decode() == "No finished QC run to combine yet: wait until a run finishes, then export."
    )
    # One run alone: the all-fail run's own verdicts (item 0 flagged there, undecided there).
    alone = b"".join(client.get(url).streaming_content).decode().splitlines()
    assert {json.loads(line)["id"] for line in alone} == {"q3"}
