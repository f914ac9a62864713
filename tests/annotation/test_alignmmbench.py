"""AlignMMBench metadata.jsonl import: the real fixture, bad rows, images, re-runs."""

import json

import pytest
from django.core.management import call_command

from annotation.models import Item, ItemRevision
from annotation.services import import_alignmmbench
from curation.models import Image
from jobs.models import Job
from tests.conftest import shared_fixture
from tests.factories import jpeg

pytestmark = pytest.mark.django_db


def entries(job):
    return {e.key: (e.outcome, e.message) for e in job.entries.all()}


def write_jsonl(path, rows):
    path.write_text(
        "\n".join(r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8"
    )
    return path


def row(
    qid,
    task="Counting",
    category="Perception & Understanding",
    image="images/1.jpg",
    prompt="How many?",
    ref="Three.",
    history=(),
):
    return {
        "question_id": qid,
        "image_path": image,
        "history": list(history),
        "prompt": prompt,
        "ref_answer": ref,
        "task": task,
        "category": category,
    }


def test_the_real_fixture_imports_every_row_with_histories_and_seed_groups(benchmark, researcher):
    path = shared_fixture("alignmmbench", "metadata.jsonl")
    source = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    job = import_alignmmbench(benchmark, path, researcher)
    assert job.status == Job.Status.SUCCEEDED, job.message
    assert job.result["imported"] == len(source) == 4978
    assert job.result["errors"] == 0
    items = Item.objects.filter(benchmark=benchmark)
    assert items.count() == 4978 and not items.filter(is_external=False).exists()
    assert items.filter(kind=Item.Kind.MULTI_TURN).count() == 271
    assert items.filter(incoherent=True).count() == 90 == sum(1 for r in source if r["task"] == "Incoherence")
    assert items.filter(seed__isnull=True).count() == 1056 and job.result["rewrites"] == 4978 - 1056

    # Histories intact: every exchange becomes a user turn and an assistant turn, text unchanged.
    by_id = {i.external_id: i for i in items.select_related("seed", "task")}
    for record in source:
        item = by_id[record["question_id"]]
        expected = [
            t
            for ex in record["history"]
            for t in ({"role": "user", "content": ex["user"]}, {"role": "assistant", "content": ex["assistant"]})
        ]
        assert item.history == expected
        assert item.question == record["prompt"] and item.task.name_en == record["task"]
        group, k = record["question_id"].split("-")
        if k == "0":
            assert item.seed is None and item.reference_answer == record["ref_answer"]
        else:  # rewrites read the reference through their seed
            assert item.seed.external_id == f"{group}-0" and item.reference_answer == ""
    assert ItemRevision.objects.filter(item__benchmark=benchmark, action="imported").count() == 4978

    # No image files came with the fixture: said once per image, and the items are still there.
    messages = entries(job)
    assert messages["image images/000000783.jpg"] == (
        "skipped",
        "image images/000000783.jpg not provided; 1 item(s) imported without image",
    )
    assert job.result["images_not_provided"] == 1054
    assert "image(s) not provided" in job.message

    again = import_alignmmbench(benchmark, path, researcher)
    assert again.result["imported"] == 0 and again.result["already_imported"] == 4978
    assert Item.objects.filter(benchmark=benchmark).count() == 4978


def test_bad_rows_are_reported_one_by_one_and_the_rest_imports(benchmark, researcher, tmp_path):
    path = write_jsonl(
        tmp_path / "metadata.jsonl",
        [
            row("00000001-0"),
            row("00000001-1", prompt="Count them."),
            '{"question_id": "00000002-0", "prompt": ',  # line 3: truncated JSON
            row("00000003-0", task="Juggling"),
            row("00000003-1"),  # its seed failed
            row("00000004-2"),  # no seed row at all
            row(
                "00000005-0",
                task="Incoherence",
                category="Dialogue Context",
                history=[{"user": "What is this?", "assistant": "A cat."}],
                prompt="No, look again: it is a dog.",
            ),
            row("00000006-0", history=[{"user": "hi"}]),
            row("00000001-1", prompt="duplicate id"),
            row("bad id"),
            row("00000007-0", task="Counting", category="Reasoning & Analysis"),
        ],
    )
    job = import_alignmmbench(benchmark, path, researcher)
    assert job.status == Job.Status.SUCCEEDED
    got = entries(job)
    assert got["line 3"][0] == "error" and "line 3: not valid JSON" in got["line 3"][1]
    assert "task 'Juggling' is not a task of this benchmark" in got["00000003-0 (line 4)"][1]
    assert "its seed row 00000003-0 was not imported" in got["00000003-1 (line 5)"][1]
    assert "there is no seed row 00000004-0" in got["00000004-2 (line 6)"][1]
    assert "history exchange 1 must have 'user' and 'assistant'" in got["00000006-0 (line 8)"][1]
    assert "already appeared on line 2" in got["00000001-1 (line 9)"][1]
    assert "is not of the form GROUP-k" in got["bad id (line 10)"][1]
    assert "is in category 'Perception & Understanding' here, not 'Reasoning & Analysis'" in got["00000007-0 (line 11)"][1]
    assert job.result["errors"] == 8 and job.result["imported"] == 3
    imported = {i.external_id: i for i in Item.objects.filter(benchmark=benchmark)}
    assert set(imported) == {"00000001-0", "00000001-1", "00000005-0"}
    assert imported["00000001-1"].seed == imported["00000001-0"]
    dialogue = imported["00000005-0"]
    assert (
        dialogue.kind == "multi_turn"
        and dialogue.incoherent
        and dialogue.history[1] == {"role": "assistant", "content": "A cat."}
    )


def test_a_rewrite_with_its_own_reference_is_kept_as_a_separate_seed(benchmark, researcher, tmp_path):
    path = write_jsonl(tmp_path / "metadata.jsonl", [row("00000001-0"), row("00000001-1", ref="Four.")])
    job = import_alignmmbench(benchmark, path, researcher)
    item = Item.objects.get(external_id="00000001-1")
    assert item.seed is None and item.reference_answer == "Four."
    assert "imported as a separate seed" in entries(job)["00000001-1 (line 2)"][1]


def test_images_next_to_the_metadata_are_stored_accepted_and_shared_by_rewrites(benchmark, researcher, tmp_path):
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "1.jpg").write_bytes(jpeg(seed=3))
    path = write_jsonl(
        tmp_path / "metadata.jsonl", [row("00000001-0"), row("00000001-1"), row("00000002-0", image="../outside.jpg")]
    )
    (tmp_path.parent / "outside.jpg").write_bytes(jpeg(seed=4))
    job = import_alignmmbench(benchmark, path, researcher)
    seed = Item.objects.get(external_id="00000001-0")
    image = seed.item_images.get().image
    assert image.status == Image.Status.ACCEPTED and image.tasks.filter(slug="counting").exists()
    rewrite = Item.objects.get(external_id="00000001-1")
    assert not rewrite.item_images.exists()
    from annotation.contract import item_payload
    from annotation.selectors import with_payload_data

    assert [i["id"] for i in item_payload(with_payload_data(Item.objects).get(pk=rewrite.pk))["images"]] == [image.pk]
    # A path escaping the metadata folder is never read.
    assert entries(job)["image ../outside.jpg"][0] == "skipped"
    assert Image.objects.count() == 1


def test_a_crashed_job_resumes_without_duplicates(benchmark, researcher, tmp_path, monkeypatch):
    from annotation import alignmmbench, services

    path = write_jsonl(tmp_path / "metadata.jsonl", [row(f"{n:08d}-0") for n in range(7)] + [row(f"{n:08d}-1") for n in range(7)])
    monkeypatch.setattr(alignmmbench, "CHUNK", 3)
    real = alignmmbench.import_external_items
    calls = {"n": 0}

    def flaky(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError("disk went away")
        return real(*args, **kwargs)

    monkeypatch.setattr(alignmmbench, "import_external_items", flaky)
    from jobs import services as jobs

    job = jobs.create_job(services.ALIGNMMBENCH_JOB, user=researcher, benchmark=benchmark, params={"path": str(path)})
    failed = jobs.run_now(job)
    assert failed.status == Job.Status.FAILED and "disk went away" in failed.message
    assert Item.objects.count() == 6
    resumed = jobs.run_now(jobs.requeue(job))
    assert resumed.status == Job.Status.SUCCEEDED
    # The summary counts both runs: the 6 items of the first run are this job's, not "already there".
    assert Item.objects.count() == 14 and resumed.result["imported"] == 14 and resumed.result["already_imported"] == 0
    assert resumed.runs == 2
    assert Item.objects.filter(seed__isnull=False).count() == 7


def test_unreadable_file_fails_the_job_with_a_message(benchmark, researcher, tmp_path):
    path = tmp_path / "metadata.jsonl"
    path.write_bytes(b"\xff\xfe\x00bad")
    job = import_alignmmbench(benchmark, path, researcher)
    assert job.status == Job.Status.FAILED and "line 1 is not UTF-8 text (byte 0xff at column 1)" in job.message


def test_management_command(benchmark, researcher, tmp_path, capsys):
    path = write_jsonl(tmp_path / "metadata.jsonl", [row("00000001-0")])
    call_command("import_alignmmbench", str(path), "--benchmark", "demo", "--user", researcher.username)
    out = capsys.readouterr().out
    assert "Imported 1 items" in out and Item.objects.count() == 1
