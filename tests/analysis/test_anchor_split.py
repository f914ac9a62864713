"""The anchor split: on the MLLM-Bench fixture it predicts each left-out model's win rate from 60
items better than stratified random samples; on a release it ships in the next release's bundle
with a card section; the figures are exported; and the analysis survives day two (a fifth model,
a page view, a job killed midway)."""

import io
import json
import tarfile

import pyarrow.parquet as pq
import pytest

from analysis import services, splits
from analysis.models import Analysis, ItemStat, ScoreResults
from exports import services as exports
from jobs import services as jobs
from jobs.selectors import job_entries, jobs_of
from tests.analysis.mllm_bench import load
from tests.conftest import shared_fixture
from tests.exports.conftest import stored

PAGE = "/b/demo/releases/1.0.0/analysis/"


def test_on_mllm_bench_60_anchors_predict_each_left_out_models_win_rate_better_than_random_samples():
    labels, keys, groups, values = load(shared_fixture("mllm-bench"))
    assert values.shape == (9, 420)
    found = splits.validate(values, keys, groups, labels, 60, seed=0)
    assert [row["label"] for row in found["models"]] == labels
    assert found["mae"] <= 0.05
    assert found["mae"] < found["random"]["median_mae"] and found["random"]["draws"] == 200
    assert found["max_error"] < 0.1 and found["coverage"] >= 0.75


@pytest.mark.django_db
@pytest.mark.usefixtures("fresh_image_indexes")
def test_the_next_releases_bundle_carries_the_split_with_a_card_section(
    frozen_mcq, score_models, benchmark, researcher, client_for, django_capture_on_commit_callbacks
):
    score_models(0, 1, 2, 3)
    web = client_for(researcher)
    with django_capture_on_commit_callbacks(execute=True):
        web.post(PAGE + "start/", {"method": "mcq", "k": "6"})
    analysis = Analysis.objects.get(release=frozen_mcq, method="mcq")
    assert analysis.k == 6 and len(analysis.split["anchors"]) == 6
    assert ItemStat.objects.filter(analysis=analysis, anchor=True).count() == 6
    validation = analysis.split["about"]["validation"]
    assert [row["label"] for row in validation["models"]] == [f"model {m}" for m in range(4)]
    page = web.get(PAGE, {"method": "mcq"}).content.decode()
    assert 'id="validation-models"' in page and "6 anchor items of 12" in page
    download = json.loads(web.get(PAGE + "split.json", {"method": "mcq"}).content)
    assert download["anchors"] == analysis.split["anchors"] and download["format"] == "benchforge-anchors/1"

    nxt = exports.create_release(benchmark, user=researcher, version="1.1.0")
    with django_capture_on_commit_callbacks(execute=True):
        exports.start_build(nxt, user=researcher)
    nxt.refresh_from_db()
    assert nxt.status == "built", nxt.job.message
    for kind in ("public.tar.gz", "private.tar.gz"):
        with tarfile.open(stored(nxt, kind)) as archive:
            split = json.load(archive.extractfile("demo-1.1.0/splits/mcq-anchors.json"))
            card = archive.extractfile("demo-1.1.0/README.md").read().decode()
            manifest = json.load(archive.extractfile("demo-1.1.0/manifest.json"))
        assert split["anchors"] == analysis.split["anchors"] and split["about"]["carried_into"] == "demo 1.1.0"
        assert "## Anchor split `mcq-anchors`" in card and "estimate --split mcq-anchors" in card
        assert "splits/mcq-anchors.json" in json.dumps(manifest["files"])


@pytest.mark.django_db
@pytest.mark.usefixtures("fresh_image_indexes")
def test_the_figures_export_as_csv_and_parquet(frozen_mcq, score_models, researcher, client_for):
    score_models(0, 1, 2)
    web = client_for(researcher)
    text = web.get(PAGE + "items.csv", {"method": "mcq"}).content.decode()
    lines = text.strip().splitlines()
    assert lines[0].startswith("id,item_id,task,question") and len(lines) == 13
    table = pq.read_table(io.BytesIO(web.get(PAGE + "items.parquet", {"method": "mcq"}).content))
    assert table.num_rows == 12 and "discrimination" in table.column_names
    stored_flags = dict(ItemStat.objects.values_list("key", "flags"))
    assert dict(zip(table.column("id").to_pylist(), table.column("flags").to_pylist())) == {
        key: ";".join(flags) for key, flags in stored_flags.items()
    }
    assert any(stored_flags.values())
    assert web.get(PAGE + "items.xlsx").status_code == 404


@pytest.mark.django_db
@pytest.mark.usefixtures("fresh_image_indexes")
def test_a_fifth_model_recomputes_the_analysis_and_a_page_view_does_not(frozen_mcq, score_models, researcher, client_for):
    first = score_models(0, 1, 2, 3)
    analysis = Analysis.objects.get(release=frozen_mcq, method="mcq")
    read_before = dict(ScoreResults.objects.values_list("score_id", "pk"))
    ran = jobs_of(frozen_mcq.benchmark, kind=services.ANALYSIS_JOB).count()
    assert ran == 2  # the third score started it, the fourth again
    for _ in range(3):
        assert client_for(researcher).get(PAGE, {"method": "mcq"}).status_code == 200
    assert jobs_of(frozen_mcq.benchmark, kind=services.ANALYSIS_JOB).count() == ran

    score_models(4)
    analysis.refresh_from_db()
    assert [m["label"] for m in analysis.scored_models] == [s.label for s in first] + ["model 4"]
    assert set(ItemStat.objects.filter(analysis=analysis).values_list("n_models", flat=True)) == {5}
    # The four scores read before were not read again.
    assert {k: v for k, v in ScoreResults.objects.values_list("score_id", "pk") if k in read_before} == read_before


@pytest.mark.django_db
@pytest.mark.usefixtures("fresh_image_indexes")
def test_an_analysis_job_killed_midway_resumes_at_the_step_it_was_in(
    frozen_mcq, score_models, researcher, monkeypatch, django_capture_on_commit_callbacks
):
    score_models(0, 1, 2)
    analysis = Analysis.objects.get(release=frozen_mcq, method="mcq")

    def killed(*args, **kwargs):
        raise RuntimeError("worker killed while choosing the anchors")

    monkeypatch.setattr(services, "_split", killed)
    with django_capture_on_commit_callbacks(execute=True):
        analysis = services.request_analysis(frozen_mcq, "mcq", user=researcher, k=4)
    job = analysis.job
    job.refresh_from_db()
    assert job.status == "failed" and "worker killed" in job.message
    assert ItemStat.objects.filter(analysis=analysis).count() == 12  # the figures step was written

    monkeypatch.undo()
    computed = Analysis.objects.get(pk=analysis.pk).computed_at

    def figures_again(*args, **kwargs):
        raise AssertionError("the figures step ran again")

    monkeypatch.setattr(services, "_item_rows", figures_again)
    with django_capture_on_commit_callbacks(execute=True):
        jobs.resume(job, user=researcher)
    job.refresh_from_db()
    analysis.refresh_from_db()
    assert job.status == "succeeded", job.message
    assert analysis.computed_at == computed and len(analysis.split["anchors"]) == 4
    keys = [e.key for e in job_entries(job)]
    assert sum(k.startswith("figures") for k in keys) == 1 and sum(k.startswith("split") for k in keys) == 1
