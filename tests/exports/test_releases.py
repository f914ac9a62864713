"""Releases: building, the split, public vs private bundles, verification, determinism, freezing
for good, diffs, the Parquet export, and a bundle scored end to end by the harness it carries."""

import json
import os
import subprocess
import sys
import tarfile
import zipfile
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Item
from benchforge_harness.bundle import iter_bytes, verify, write_tar_gz
from exports import services
from exports.models import FrozenRelease, Release, ReleaseFile, ReleaseImage, ReleaseItem
from tests.exports.conftest import stored

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_image_indexes")]


def test_a_build_snapshots_the_items_and_writes_every_file(built):
    release = built(private=["test_answers", "reference_answers", "criteria"])
    assert release.counts["items"] == 22 and release.counts["seeds"] == 10 and release.counts["images"] == 10
    assert release.counts["dev"] + release.counts["test"] == 22
    assert set(release.files.values_list("kind", flat=True)) == set(ReleaseFile.Kind.values)
    for kind in ("public.tar.gz", "public.zip", "private.tar.gz", "private.zip"):
        assert verify(stored(release, kind)) == [], kind
    names = {name for name, _ in iter_bytes(stored(release, "public.zip"))}
    assert {
        "items.jsonl",
        "taxonomy.json",
        "mcq.tsv",
        "README.md",
        "LICENSE",
        "manifest.json",
        "charts/items_per_task.svg",
        "benchforge_harness/__main__.py",
        "benchforge_harness/release.py",
    } <= names
    assert sum(n.startswith("images/") for n in names) == 10
    card = dict(iter_bytes(stored(release, "public.zip")))["README.md"].decode()
    assert "| 计数 |" in card and "Seed questions: 10; approved rewrites: 12 (1.2 per seed)" in card


def test_the_split_is_reproducible_and_keeps_seed_groups_together(built, accepted):
    release = built(dev_ratio=0.4, split_seed=3)
    splits = dict(release.items.values_list("item_id", "split"))
    for item in accepted:
        if item.seed_id:
            assert splits[item.pk] == splits[item.seed_id]  # a rewrite lives where its seed does
    again = services.assign_splits([(i.pk, i.seed_id or i.pk, i.task_id) for i in accepted], dev_ratio=0.4, seed=3)
    assert again == splits
    # Another seed, another draw (with ten groups two seeds can draw alike: one of several must differ).
    others = [
        services.assign_splits([(i.pk, i.seed_id or i.pk, i.task_id) for i in accepted], dev_ratio=0.4, seed=seed)
        for seed in range(4, 12)
    ]
    assert any(other != splits for other in others)
    per_task = release.counts["tasks"]
    # Whole groups: 0.4 * 18 = 7.2 is reached as closely as groups of 3 allow (6, not 9).
    assert per_task["计数"]["dev"] == 6 and per_task["计数"]["test"] == 12
    assert per_task["OCR"] == {"dev": 2, "test": 2}


def test_the_public_bundle_holds_none_of_what_it_withholds_and_the_private_one_holds_it_all(built):
    release = built(private=["test_answers", "reference_answers", "criteria"])
    public = b"".join(content for _, content in iter_bytes(stored(release, "public.tar.gz")))
    private = b"".join(content for _, content in iter_bytes(stored(release, "private.tar.gz")))
    for n in range(10):
        assert f"SECRET-REFERENCE-{n}".encode() not in public and f"SECRET-REFERENCE-{n}".encode() in private
        assert f"SECRET-CRITERION-{n}".encode() not in public and f"SECRET-CRITERION-{n}".encode() in private
    rows = [json.loads(line) for line in dict(iter_bytes(stored(release, "public.zip")))["items.jsonl"].splitlines()]
    assert all(r["reference_answer"] is None and r["criteria"] == [] for r in rows)
    assert {r["answer"] for r in rows if r["split"] == "test"} == {None}
    assert {r["answer"] for r in rows if r["split"] == "dev" and r["choices"]} == {"C"}  # dev keys stay public
    tsv = dict(iter_bytes(stored(release, "public.zip")))["mcq.tsv"].decode().splitlines()
    header = tsv[0].split("\t")
    for line in tsv[1:]:
        cells = dict(zip(header, line.split("\t")))
        assert cells["answer"] == ("C" if cells["split"] == "dev" else "")
    private_rows = [json.loads(line) for line in dict(iter_bytes(stored(release, "private.zip")))["items.jsonl"].splitlines()]
    assert {r["answer"] for r in private_rows if r["choices"]} == {"C"}


def test_verification_catches_a_flipped_byte(built, tmp_path):
    release = built()
    folder = tmp_path / "bundle"
    services.write_bundle(release, "public", folder)
    assert verify(folder) == []
    image = next((folder / "images").iterdir())
    data = bytearray(image.read_bytes())
    data[len(data) // 2] ^= 0x01
    image.write_bytes(bytes(data))
    problems = verify(folder)
    assert problems == [f"images/{image.name}: sha256 differs from the manifest (the file was changed or damaged)"]
    (folder / "extra.txt").write_text("smuggled")
    assert "extra.txt: not listed in the manifest" in verify(folder)
    write_tar_gz(folder, tmp_path / "b.tar.gz", top="b")
    assert any("sha256 differs" in p for p in verify(tmp_path / "b.tar.gz"))
    result = subprocess.run([sys.executable, "-m", "benchforge_harness", "verify", str(folder)], capture_output=True, text=True)
    assert result.returncode == 1 and "does NOT match" in result.stderr


def test_two_builds_of_the_same_release_are_byte_identical(built, researcher, django_capture_on_commit_callbacks, monkeypatch):
    release = built()
    first = dict(release.files.values_list("kind", "sha256"))
    later = timezone.now() + timedelta(days=1, seconds=7)
    monkeypatch.setattr(services.timezone, "now", lambda: later)  # a rebuild on another day
    with django_capture_on_commit_callbacks(execute=True):
        services.start_build(release, user=researcher)
    release.refresh_from_db()
    assert release.built_at == later.replace(microsecond=0)
    assert dict(release.files.values_list("kind", "sha256")) == first


@pytest.fixture
def builder_settings(monkeypatch):
    """Set the umask, time zone and locale of the process that builds, as a build server might have them."""
    import time

    saved = os.umask(0o022)
    os.umask(saved)

    def use(umask: int, zone: str, locale: str) -> None:
        os.umask(umask)
        monkeypatch.setenv("TZ", zone)
        monkeypatch.setenv("LC_ALL", locale)
        monkeypatch.setenv("SOURCE_DATE_EPOCH", str(int(time.time())))  # a build tool's own setting, ignored
        time.tzset()
        monkeypatch.setattr(services, "_HARNESS_WHEELS", {})  # the wheel is built again, under these settings

    yield use
    os.umask(saved)
    monkeypatch.undo()
    time.tzset()


def test_a_build_is_byte_identical_whatever_the_umask_zone_and_locale_of_the_builder(
    built, researcher, django_capture_on_commit_callbacks, builder_settings, tmp_path
):
    builder_settings(0o022, "UTC", "C.UTF-8")
    release = built()
    first = dict(release.files.values_list("kind", "sha256"))  # the sha256 of the bytes each build stored
    builder_settings(0o077, "Pacific/Chatham", "C")
    with django_capture_on_commit_callbacks(execute=True):
        services.start_build(release, user=researcher)
    release.refresh_from_db()
    second = dict(release.files.values_list("kind", "sha256"))
    assert set(first) == set(second) == {"public.tar.gz", "public.zip", "private.tar.gz", "private.zip", "parquet"}
    assert [kind for kind in first if first[kind] != second[kind]] == []
    # The wheel a bundle carries records the same modes whoever built it: files 0644.
    services.write_bundle(release, "public", tmp_path / "bundle")
    with zipfile.ZipFile(next((tmp_path / "bundle").glob("*.whl"))) as wheel:
        assert {oct(i.external_attr >> 16) for i in wheel.infolist()} == {"0o100644"}


def test_freezing_is_irreversible_from_every_entry_point(built, researcher, api_for, client_for, benchmark):
    release = built()
    frozen = services.freeze(release, user=researcher)
    assert frozen.is_frozen and set(
        Item.objects.filter(pk__in=release.items.values("item_id")).values_list("status", flat=True)
    ) == {"released"}
    # ORM: model saves and deletes, queryset updates and deletes, on the release and its rows.
    frozen.notes = "changed"
    with pytest.raises(FrozenRelease, match="is frozen"):
        frozen.save()
    for attempt in (
        lambda: Release.objects.filter(pk=frozen.pk).update(notes="x"),
        lambda: Release.objects.get(pk=frozen.pk).delete(),
        lambda: ReleaseItem.objects.filter(release=frozen).update(split="dev"),
        lambda: ReleaseItem.objects.filter(release=frozen).first().delete(),
        lambda: ReleaseImage.objects.filter(release=frozen).delete(),
        lambda: ReleaseFile.objects.filter(release=frozen).update(sha256="0"),
    ):
        with pytest.raises(FrozenRelease):
            attempt()
    item_row = ReleaseItem.objects.filter(release=frozen).first()
    item_row.row = {}
    with pytest.raises(FrozenRelease):
        item_row.save()
    # Bulk paths of every release model: creates, updates, and a row moved out of the frozen release.
    image = ReleaseImage.objects.filter(release=frozen).first()
    file = ReleaseFile.objects.filter(release=frozen).first()
    draft = services.create_release(frozen.benchmark, user=researcher, version="2.0.0")
    counts = (ReleaseItem.objects.count(), ReleaseImage.objects.count(), ReleaseFile.objects.count())
    moved = ReleaseItem.objects.filter(release=frozen).first()
    moved.release = draft
    for attempt in (
        lambda: ReleaseImage.objects.bulk_create(
            [ReleaseImage(release=frozen, name="images/x.jpg", sha256="0" * 64, storage_name="x", size=1)]
        ),
        lambda: ReleaseItem.objects.bulk_create(
            [ReleaseItem(release=frozen, key="new", item_id=1, task="t", split="dev", row={}, order=999)]
        ),
        lambda: ReleaseFile.objects.bulk_create([ReleaseFile(release=frozen, kind="x", storage_name="x", sha256="0", size=1)]),
        lambda: frozen.images.bulk_create(
            [ReleaseImage(release=frozen, name="images/y.jpg", sha256="0" * 64, storage_name="y", size=1)]
        ),
        lambda: ReleaseImage.objects.bulk_update([setattr(image, "license", "x") or image], ["license"]),
        lambda: ReleaseFile.objects.bulk_update([setattr(file, "sha256", "1") or file], ["sha256"]),
        lambda: ReleaseItem.objects.bulk_update([moved], ["release"]),
        lambda: Release.objects.bulk_update([setattr(frozen, "notes", "y") or frozen], ["notes"]),
    ):
        with pytest.raises(FrozenRelease):
            attempt()
    assert (ReleaseItem.objects.count(), ReleaseImage.objects.count(), ReleaseFile.objects.count()) == counts
    assert not ReleaseItem.objects.filter(release=draft).exists()
    frozen.refresh_from_db()
    # Services, API, pages and admin.
    with pytest.raises(FrozenRelease):
        services.start_build(frozen, user=researcher)
    with pytest.raises(FrozenRelease):
        services.freeze(frozen, user=researcher)
    api = api_for(researcher)
    assert api.patch(f"/api/v1/benchmarks/demo/releases/{frozen.version}/", {"notes": "x"}, format="json").status_code == 409
    assert api.delete(f"/api/v1/benchmarks/demo/releases/{frozen.version}/").status_code == 409
    assert api.post(f"/api/v1/benchmarks/demo/releases/{frozen.version}/build/").status_code == 409
    page = client_for(researcher).post(f"/b/demo/releases/{frozen.version}/build/", follow=True)
    assert "is frozen" in page.content.decode()
    from django.contrib.auth import get_user_model

    admin_user = get_user_model().objects.create_superuser("admin", "a@example.org", "a-long-admin-password")
    admin = client_for(admin_user)
    change = admin.post(f"/admin/exports/release/{frozen.pk}/change/", {"version": "9.9.9", "notes": "x"})
    assert change.status_code == 403
    assert admin.post(f"/admin/exports/release/{frozen.pk}/delete/", {"post": "yes"}).status_code == 403
    frozen.refresh_from_db()
    assert frozen.notes == "" and frozen.version == "1.0.0" and Release.objects.filter(pk=frozen.pk).exists()


def test_a_diff_names_added_removed_and_changed_items_and_hides_private_fields(
    built, accepted, researcher, api_for, annotator, benchmark
):
    first = services.freeze(built(private=["reference_answers"]), user=researcher)
    seed = next(i for i in accepted if i.seed_id is None and i.kind == "single_turn")
    Item.objects.filter(pk=seed.pk).update(question="How many apples, exactly?", reference_answer="Now SECRET-NEW.")
    Item.objects.filter(pk=accepted[-1].pk).update(status="rejected")
    second = built(version="1.1.0", private=["reference_answers"])
    assert second.source == first
    # Items in both releases stay on their side of the split.
    old_splits = dict(first.items.values_list("item_id", "split"))
    assert all(old_splits[i] == split for i, split in second.items.values_list("item_id", "split"))
    result = api_for(researcher).get("/api/v1/benchmarks/demo/releases/1.1.0/diff/", {"against": "1.0.0"}).json()
    assert result["removed"] == [str(accepted[-1].pk)] and result["added"] == []
    changed = {c["id"]: {f["field"] for f in c["fields"]} for c in result["changed"]}
    assert changed[str(seed.pk)] == {"question", "reference_answer"}
    hidden = api_for(annotator).get("/api/v1/benchmarks/demo/releases/1.1.0/diff/", {"against": "1.0.0"}).json()
    assert {f["field"] for c in hidden["changed"] for f in c["fields"]} == {"question"}
    assert "SECRET-NEW" not in json.dumps(hidden)


def test_the_parquet_export_loads_with_datasets(built, tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    release = built(private=["test_answers", "reference_answers", "criteria"])
    with zipfile.ZipFile(stored(release, "parquet")) as archive:
        archive.extractall(tmp_path)
    root = tmp_path / release.top
    loaded = datasets.load_dataset(str(root), cache_dir=str(tmp_path / "cache"))
    assert set(loaded) == {"dev", "test"}
    assert len(loaded["dev"]) + len(loaded["test"]) == 22
    first = loaded["dev"][0]
    assert first["images"][0].size == (640, 520)  # decoded as an image, embedded in the file
    assert first["reference_answer"] is None and first["criteria"] == []
    assert all(row["answer"] is None for row in loaded["test"])


def test_a_bundle_scores_end_to_end_with_the_harness_it_carries(built, tmp_path, fake_llm):
    release = built()
    with tarfile.open(stored(release, "private.tar.gz")) as archive:
        archive.extractall(tmp_path, filter="data")
    root = tmp_path / release.top
    models = tmp_path / "models.toml"  # outside the bundle: verify checks the bundle exactly
    models.write_text(
        f'[models.vlm]\nprovider = "openai"\nbase_url = "{fake_llm.base_url("openai")}"\nmodel = "vlm"\n'
        f'api_key_env = "FAKE_KEY"\nvision = true\n\n'
        f'[models.judge]\nprovider = "openai"\nbase_url = "{fake_llm.base_url("openai")}"\nmodel = "judge"\napi_key_env = "FAKE_KEY"\n'
    )
    fake_llm.script("vlm", "There are three apples.")
    fake_llm.script("judge", '{"rating": 8, "reason": "correct and complete"}')
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DJANGO_SETTINGS_MODULE")}
    env.update(FAKE_KEY="test-key", BENCHFORGE_MODELS=str(models))

    def run(*args):
        return subprocess.run(
            [sys.executable, "-m", "benchforge_harness", *args],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    assert run("verify", ".").returncode == 0
    infer = run("infer", "--model", "vlm", "--workers", "1", "--no-cache")
    assert infer.returncode == 0, infer.stderr
    judged = run("judge", "--judge", "judge", "--predictions", "predictions/vlm.jsonl", "--workers", "1", "--no-cache")
    assert judged.returncode == 0, judged.stderr
    results = json.loads(next(root.glob("results/**/results.json")).read_text())
    scored = results["models"]["vlm"]
    assert scored["judged"] == 18 and scored["errors"] == 0 and scored["mean"] == 8  # the 18 open questions
    assert scored["alignment"]["groups"] == 6  # the seed groups the release kept together
    assert len(fake_llm.requests("vlm")) == 18  # every open question went to the model under test


def test_released_items_carry_their_qc_runs_and_the_card_counts_qc_removals(benchmark, researcher, built, monkeypatch):
    from qc.demo import add_demo
    from qc.models import QCItem
    from qc.services import decide

    add_demo(benchmark, {"researcher": researcher})
    flagged = list(QCItem.objects.filter(flagged=True).select_related("item").order_by("pk"))
    decide(flagged[0], user=researcher, decision="remove", note="the options give it away")
    decide(flagged[1], user=researcher, decision="keep", note="needs the chart after all")
    release = built()
    kept = release.items.get(item_id=flagged[1].item_id)
    (run,) = kept.provenance["qc"]
    assert run["filter"] == "text_only" and run["flagged"] and run["decision"] == "keep"
    assert not release.items.filter(item_id=flagged[0].item_id).exists()
    card = dict(iter_bytes(stored(release, "public.zip")))["README.md"].decode()
    assert "Removed by the quality filters: 1 (answerable without the image (text-only filter): 1)." in card


def test_an_approved_rewrite_keeps_its_batch_model_and_template_version(benchmark, researcher, reviewer, annotator, built):
    from rewrite.demo import add_demo
    from rewrite.selectors import provenance

    add_demo(benchmark, {"researcher": researcher, "reviewer": reviewer, "annotator": annotator})
    release = built()
    approved = provenance(release.items.values_list("item_id", flat=True))
    assert approved  # the demo batch's approved rewrite is released
    for item_id, expected in approved.items():
        origin = release.items.get(item_id=item_id).provenance["rewrite"]
        assert origin == json.loads(json.dumps(expected)) and origin["template_version"] is not None
    # ... and items.jsonl says it too, in every bundle (docs/rewrite.md).
    for variant in ("public.zip", "private.zip"):
        rows = {
            r["meta"]["benchforge_id"]: r
            for r in map(json.loads, dict(iter_bytes(stored(release, variant)))["items.jsonl"].splitlines())
        }
        for item_id, expected in approved.items():
            written = rows[item_id]["meta"]["rewrite"]
            assert written["batch_number"] == expected["batch_number"] and written["model"] == expected["model"]
            assert written["template_version"] == expected["template_version"] and written["template"] == expected["template"]


def test_release_notes_and_license_go_into_the_card_as_text_not_html(built, client_for, researcher):
    release = built(
        notes='Read me <img src=x onerror="alert(1)"> <script>alert(2)</script> & more',
        license="<a href='javascript:alert(3)'>MIT</a>",
    )
    card = dict(iter_bytes(stored(release, "public.zip")))["README.md"].decode()
    assert "<img" not in card and "<script" not in card and "<a href" not in card
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in card or '&lt;img src=x onerror="alert(1)"&gt;' in card
    assert "&lt;script&gt;alert(2)&lt;/script&gt; &amp; more" in card
    page = client_for(researcher).get(f"/b/demo/releases/{release.version}/card/").content.decode()
    shown = page.split('id="dataset-card"')[1]
    assert "<script>alert(2)" not in shown and "<img src=x" not in shown and "<a href='javascript" not in shown
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in shown  # shown, as text


def test_a_release_keeps_the_language_of_its_benchmark_and_its_harness_asks_in_it(benchmark, built, tmp_path):
    benchmark.language = "zh"
    benchmark.save(update_fields=["language"])
    release = built()
    benchmark.language = "en"  # changed later: the release keeps the language it was built in
    benchmark.save(update_fields=["language"])
    release.refresh_from_db()
    assert release.language == "zh"
    with tarfile.open(stored(release, "private.tar.gz")) as archive:
        archive.extractall(tmp_path, filter="data")
    root = tmp_path / release.top
    assert json.loads((root / "manifest.json").read_text())["language"] == "zh"
    from benchforge_harness import Prompts, load_release

    bundle = load_release(root)
    assert {item.language for item in bundle.items} == {"zh"}
    assert "从 1 到 10 中选一个分数" in Prompts().get("pointwise", bundle.items[0].language).text


def test_freezing_a_release_while_it_builds_or_before_it_was_built_is_a_409_saying_what_to_do(
    benchmark, researcher, accepted, api_for
):
    """Issue 45: a state conflict answered 400 ("is building: build it before freezing")."""
    release = services.create_release(benchmark, user=researcher, version="4.5.0")
    url = f"/api/v1/benchmarks/{benchmark.slug}/releases/4.5.0/freeze/"
    draft = api_for(researcher).post(url)
    assert draft.status_code == 409 and "build it before freezing" in draft.json()["detail"]
    services.start_build(release, user=researcher)  # the job is queued, not run: the release is building
    release.refresh_from_db()
    assert release.status == Release.Status.BUILDING
    building = api_for(researcher).post(url)
    assert building.status_code == 409
    assert "wait until its build finishes, then freeze it" in building.json()["detail"]


def test_what_needs_a_frozen_release_is_a_409_saying_to_freeze_it_first(benchmark, researcher, accepted):
    """Issue 45: state conflicts answered 400. Scoring, analysing or studying a release that is not
    frozen yet is refused with 409; nothing is saved."""
    from analysis.services import request_analysis
    from benchforge.errors import Conflict
    from exports.leaderboard import submit
    from humaneval.services import plan_study

    release = services.create_release(benchmark, user=researcher, version="4.5.1")
    attempts = {
        "score": lambda: submit(release, user=researcher, label="m", method="pointwise", predictions=b"{}"),
        "analyse": lambda: request_analysis(release, "pointwise", user=researcher),
        "study": lambda: plan_study(release, user=researcher, mode="pointwise", scores=[], raters=[], per_task=1),
    }
    for what, attempt in attempts.items():
        with pytest.raises(Conflict, match="is not frozen") as refused:
            attempt()
        assert refused.value.status == 409, what


def test_a_release_reads_its_state_from_its_build_job(benchmark, researcher, accepted, api_for, client_for):
    """Issue 45: a build whose worker was lost, or that failed for good, showed "Building" forever.
    Like QC runs and rewrite batches, the release shows its build job's state with the reason."""
    from jobs.models import Job

    release = services.create_release(benchmark, user=researcher, version="4.5.2")
    services.start_build(release, user=researcher)  # queued, not run: the release is building
    release.refresh_from_db()
    api = api_for(researcher)
    url = f"/api/v1/benchmarks/{benchmark.slug}/releases/4.5.2/"
    assert (api.get(url).json()["status"], api.get(url).json()["state"]) == ("queued", "Queued")

    lost = timezone.now() - timedelta(seconds=3600)
    Job.objects.filter(pk=release.job_id).update(status=Job.Status.RUNNING, heartbeat_at=lost, worker="gone (pid 1)")
    assert api.get(url).json()["status"] == "interrupted"

    gave_up = "Its worker gone (pid 1) was lost: re-queued automatically 3 time(s); resume it once the cause is fixed."
    Job.objects.filter(pk=release.job_id).update(status=Job.Status.FAILED, message=gave_up)
    row = api.get(url).json()
    assert (row["status"], row["state"], row["state_reason"]) == ("failed", "Failed", gave_up)
    page = client_for(researcher).get(f"/b/{benchmark.slug}/releases/4.5.2/").content.decode()
    assert '<span class="release-failed" id="release-status">Failed</span>' in page
    listed = client_for(researcher).get(f"/b/{benchmark.slug}/releases/").content.decode()
    assert '<td class="release-failed">Failed</td>' in listed
    refused = api.post(f"{url}freeze/")  # its build is not under way: build it again, no waiting
    assert refused.status_code == 409 and refused.json()["detail"] == "Release 4.5.2 is failed: build it before freezing."

    built = services.start_build(release, user=researcher, here=True)
    assert api.get(url).json()["status"] == built.status == Release.Status.BUILT
