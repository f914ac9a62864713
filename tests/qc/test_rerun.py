"""QC decisions survive a re-run: an item a researcher kept is not flagged again by running the
filter once more; the new verdict is recorded beside the decision and the adjudication list says
"kept earlier"."""

import pytest
from django.urls import reverse

from annotation.models import Item
from annotation.workflow import QC_FLAGGED, QC_PASSED
from qc import services
from qc.models import QCItem
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
