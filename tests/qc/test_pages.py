"""Decisions, the cleaned benchmark's export, what exports reads (provenance, removed_items), the
pages and the API, over the demo's finished run (canned answers, no calls)."""

import csv
import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.contract import MMBENCH_COLUMNS
from annotation.models import Item, ItemRevision
from annotation.workflow import QC_FLAGGED, QC_PASSED
from benchforge.errors import DomainError, NotAllowed
from qc import export, selectors, services
from qc.demo import add_demo
from qc.models import QCAnswer, QCItem, QCRun

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo_run(benchmark, researcher):
    message = add_demo(benchmark, {"researcher": researcher})
    assert "3 flagged" in message
    return QCRun.objects.get(benchmark=benchmark)


def entry_of(run, n) -> QCItem:
    return QCItem.objects.select_related("item").get(run=run, item__external_id=f"qc-demo-{n}")


def test_the_demo_is_idempotent_and_explains_its_flags(benchmark, researcher, demo_run):
    assert add_demo(benchmark, {"researcher": researcher}) == "QC demo run already there."
    assert QCRun.objects.filter(benchmark=benchmark).count() == 1
    flagged = {e.item.external_id for e in QCItem.objects.filter(run=demo_run, flagged=True).select_related("item")}
    assert flagged == {"qc-demo-0", "qc-demo-1", "qc-demo-4"}
    assert QCAnswer.objects.filter(run=demo_run, item=entry_of(demo_run, 0).item, model="demo-llm-a").count() == 4
    report = selectors.report(demo_run)
    assert report["flagged"] == 3 and report["calls"]["made"] < report["calls"]["every_call"] == 72


def test_decisions_move_the_item_and_record_who_and_why(demo_run, researcher, annotator):
    removed, kept, fixed = entry_of(demo_run, 0), entry_of(demo_run, 1), entry_of(demo_run, 4)
    assert removed.item.status == QC_FLAGGED
    with pytest.raises(NotAllowed):
        services.decide(removed, user=annotator, decision="remove")

    services.decide(removed, user=researcher, decision="remove", note="the capital is common knowledge")
    services.decide(kept, user=researcher, decision="keep", note="the image shows the legs")
    services.decide(fixed, user=researcher, decision="fix")

    statuses = dict(Item.objects.filter(pk__in=[removed.item_id, kept.item_id, fixed.item_id]).values_list("pk", "status"))
    assert statuses == {removed.item_id: QC_FLAGGED, kept.item_id: QC_PASSED, fixed.item_id: QC_PASSED}
    removed.refresh_from_db()
    assert removed.decision == "remove" and removed.decided_by == researcher and removed.decided_at is not None
    assert ItemRevision.objects.filter(item_id=kept.item_id, action="qc_decided", note__contains="keep").exists()
    with pytest.raises(DomainError, match="Unknown decision"):
        services.decide(kept, user=researcher, decision="maybe")

    # What the exports app reads.
    provenance = selectors.provenance([removed.item_id, kept.item_id, 999999])
    assert set(provenance) == {removed.item_id, kept.item_id}
    assert provenance[removed.item_id]["runs"] == [
        {
            "run": demo_run.pk,
            "number": demo_run.number,
            "benchmark": demo_run.benchmark.slug,
            "filter": "text_only",
            "flagged": True,
            "decision": "remove",
            "note": "the capital is common knowledge",
            "models": ["demo-llm-a", "demo-llm-b", "demo-llm-c"],
            "solved_by": ["demo-llm-a", "demo-llm-b"],
        }
    ]
    [gone] = selectors.removed_items(benchmark=demo_run.benchmark)
    assert gone["item"] == removed.item_id and gone["external_id"] == "qc-demo-0" and gone["decided_by"] == researcher.username
    assert set(gone) == {"item", "external_id", "run", "number", "filter", "reason", "note", "decided_by", "decided_at"}
    assert "without the image" in gone["reason"]
    assert selectors.removed_items(item_ids=[kept.item_id]) == []


def test_the_cleaned_benchmark_leaves_out_removed_and_undecided_items(demo_run, researcher):
    services.decide(entry_of(demo_run, 0), user=researcher, decision="remove", note="no image needed")
    services.decide(entry_of(demo_run, 1), user=researcher, decision="keep")

    rows = list(csv.DictReader(io.StringIO("".join(export.tsv_lines(demo_run))), delimiter="\t"))
    assert list(rows[0]) == list(MMBENCH_COLUMNS)
    questions = [r["question"] for r in rows]
    assert len(rows) == 4 and not any("capital of France" in q for q in questions)
    assert not any("largest in the solar system" in q for q in questions)  # flagged, not decided: not clean
    legs = next(r for r in rows if "legs" in r["question"])
    assert (legs["A"], legs["B"], legs["answer"]) == ("Four", "Six", "B")
    lines = [json.loads(line) for line in export.jsonl_lines(demo_run)]
    assert len(lines) == 4 and lines[0]["choices"]["A"]
    left_out = {r["external_id"]: r for r in export.removed(demo_run)}
    assert left_out["qc-demo-0"]["decision"] == "remove" and left_out["qc-demo-0"]["note"] == "no image needed"
    assert left_out["qc-demo-4"]["reason"] == export.UNDECIDED


def test_pages_show_the_run_the_chart_and_the_adjudication(client_for, researcher, annotator, demo_run):
    slug, number = demo_run.benchmark.slug, demo_run.number
    c = client_for(researcher)
    page = c.get(f"/b/{slug}/qc/")
    assert page.status_code == 200 and b'id="qc-runs"' in page.content and b"Estimate" in page.content
    report = c.get(f"/b/{slug}/qc/runs/{number}/").content.decode()
    assert 'id="qc-chart"' in report and "<svg" in report and "if nothing stopped: 72" in report
    assert "style=" not in report.split('id="qc-chart"')[1].split("</figure>")[0]  # the CSP allows no inline style
    flagged = c.get(f"/b/{slug}/qc/runs/{number}/flagged/").content.decode()
    assert flagged.count("data-item=") == 3
    item = entry_of(demo_run, 0).item
    page = c.get(f"/b/{slug}/qc/runs/{number}/items/{item.pk}/").content.decode()
    assert "capital of France" in page and 'id="qc-remove"' in page and 'data-key="r"' in page and "demo-llm-b" in page
    response = c.post(f"/b/{slug}/qc/runs/{number}/items/{item.pk}/", {"decision": "fix", "note": ""})
    assert response.status_code == 302 and response["Location"] == f"/b/{slug}/items/{item.pk}/"
    assert c.get(f"/b/{slug}/qc/runs/{number}/export.tsv").status_code == 200
    assert c.get(f"/b/{slug}/qc/runs/{number}/export.jsonl").status_code == 200
    removed = c.get(f"/b/{slug}/qc/runs/{number}/removed.json")
    assert removed.status_code == 200 and json.loads(removed.content)
    dashboard = c.get(f"/b/{slug}/").content.decode()
    assert 'id="qc-overview"' in dashboard and "3 of 6 items flagged" in dashboard
    assert client_for(annotator).get(f"/b/{slug}/qc/").status_code == 403


def test_the_api_reads_runs_and_decides(api_for, researcher, demo_run):
    api = api_for(researcher)
    slug, number = demo_run.benchmark.slug, demo_run.number
    runs = api.get(f"/api/v1/benchmarks/{slug}/qc/runs/").json()
    assert runs["results"][0]["number"] == number if isinstance(runs, dict) else runs[0]["number"] == number
    body = api.get(f"/api/v1/benchmarks/{slug}/qc/runs/{number}/").json()
    assert body["report"]["flagged"] == 3 and body["run"]["models"] == ["demo-llm-a", "demo-llm-b", "demo-llm-c"]
    flagged = api.get(f"/api/v1/benchmarks/{slug}/qc/runs/{number}/flagged/").json()
    rows = flagged["results"] if isinstance(flagged, dict) else flagged
    assert len(rows) == 3 and rows[0]["answers"][0]["model"] == "demo-llm-a"
    item = entry_of(demo_run, 1).item_id
    decided = api.post(
        f"/api/v1/benchmarks/{slug}/qc/runs/{number}/items/{item}/decision/", {"decision": "keep", "note": "fine"}, format="json"
    )
    assert decided.status_code == 200 and decided.json()["decision"] == "keep"
    bad = api.post(f"/api/v1/benchmarks/{slug}/qc/runs/{number}/items/{item}/decision/", {"decision": "nope"}, format="json")
    assert bad.status_code == 400


@pytest.mark.django_db(transaction=True)
def test_the_import_page_lists_rows_with_problems_by_line(client_for, researcher, django_capture_on_commit_callbacks):
    data = b"index\tquestion\thint\tA\tB\tC\tD\tanswer\tcategory\tl2-category\tsplit\timage\n1\tQ?\t\ta\ta\t\t\tA\tc\tl\tdev\t1\n"
    c = client_for(researcher)
    with django_capture_on_commit_callbacks(execute=True):
        response = c.post("/qc/import/", {"format": "mmbench_tsv", "name": "Tiny", "file": SimpleUploadedFile("t.tsv", data)})
    assert response.status_code == 302
    page = c.get(response["Location"]).content.decode()
    assert "line 2: repeated options: A and B" in page


def test_the_api_imports_a_file(api_for, researcher, django_capture_on_commit_callbacks):
    data = b"index\tquestion\thint\tA\tB\tC\tD\tanswer\tcategory\tl2-category\tsplit\timage\n1\tQ?\t\ta\tb\t\t\tC\tc\tl\tdev\t1\n"
    with django_capture_on_commit_callbacks(execute=True):
        response = api_for(researcher).post(
            "/api/v1/qc/imports/",
            {"format": "mmbench_tsv", "name": "Via API", "file": SimpleUploadedFile("t.tsv", data)},
            format="multipart",
        )
    assert response.status_code == 202, response.content
    from jobs.models import Job

    job = Job.objects.get(pk=response.json()["job"])
    assert "answer 'C' is not among the non-empty options (A-B)" in job.entries.get(outcome="error").message
