"""External benchmark imports: an MMBench TSV with every defect the format allows (each reported by
line, the valid rows imported), 2- and 3-option rows, shared images, several images, circular
copies collapsed, test rows without answers; streaming (memory stays far below the file's
size); resuming; MLLM-Bench questions from the shared fixture; AlignMMBench through annotation."""

import base64
import csv
import io
import tracemalloc

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image as PILImage

from annotation.models import Item
from curation.models import Benchmark, Image
from curation.services import Ingester
from jobs import services as jobs
from jobs.models import Job
from qc.models import ExternalSource
from qc.services import imports
from tests.conftest import shared_fixture
from tests.factories import encode, jpeg

pytestmark = pytest.mark.django_db

HEADER = ["index", "question", "hint", "A", "B", "C", "D", "answer", "category", "l2-category", "split", "image"]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def tsv(rows: list[list]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, delimiter="\t", lineterminator="\n")
    writer.writerow(HEADER)
    writer.writerows(rows)
    return out.getvalue().encode()


def row(index, question="What is shown?", options=("cat", "dog", "bird", "fish"), answer="A", split="dev", image="", hint=""):
    opts = list(options) + [""] * (4 - len(options))
    return [index, question, hint, *opts, answer, "object recognition", "perception", split, image]


IMG1, IMG2, IMG3 = b64(jpeg(1)), b64(jpeg(2)), b64(jpeg(3))

# line numbers: the header is line 1, so rows[n] is on line n + 2
ROWS = [
    row(1, image=IMG1),  # 2: a good four-option row
    row(2, options=("yes", "no"), answer="B", image="1"),  # 3: two options, shares index 1's image
    row(3, options=("red", "green", "blue"), answer="C", image=IMG2),  # 4: three options
    row(1000001, options=("dog", "bird", "fish", "cat"), answer="D", image="1"),  # 5: circular copy 1 of index 1
    row(2000001, options=("bird", "fish", "cat", "dog"), answer="C", image="1"),  # 6: circular copy 2
    row(4, answer="", split="test", image=IMG3),  # 7: a test row without its answer: fine
    row(5, answer="", split="dev", image=IMG1),  # 8: a dev row without an answer
    [6, "Too short", "", "a", "b"],  # 9: missing columns
    row(7, image="not base64 at all!!"),  # 10: bad base64
    row(8, image=b64(b"just some text, not a picture")),  # 11: not an image
    row(9, options=("up", "down"), answer="C", image=IMG1),  # 12: answer among the empty options
    row(10, options=("alone",), image=IMG1),  # 13: fewer than 2 options
    row(11, options=("same", "other", "Same"), image=IMG1),  # 14: repeated options
    row(3, image=IMG1),  # 15: duplicate index
    row(12, image="999"),  # 16: a shared image that no row has
    row(13, image="14"),  # 17: shares the image of a later row
    row(14, image=f'["{IMG2}", "{IMG3}"]'),  # 18: several images
    row(3000099, image="1"),  # 19: circular copy of a row that is not there
    row(15, options=("a", "", "c"), image=IMG1),  # 20: a gap in the options
    row(16, image="7"),  # 21: the image of a row that was refused
]


def run_import(benchmark, researcher, data: bytes, name="bench.tsv", fmt=imports.MMBENCH_TSV) -> Job:
    return imports.start_import(user=researcher, file=SimpleUploadedFile(name, data), format=fmt, benchmark=benchmark)


@pytest.fixture
def external(researcher):
    from curation.services import create_benchmark

    return create_benchmark(name="MMBench dev", user=researcher)


def errors_by_line(job) -> dict[int, str]:
    return {int(e.key.split()[1]): e.message for e in job.entries.filter(outcome="error")}


@pytest.mark.django_db(transaction=True)
def test_a_malformed_tsv_imports_what_is_valid_and_reports_the_rest_by_line(external, researcher, fresh_image_indexes):
    job = run_import(external, researcher, tsv(ROWS))

    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED, job.message
    errors = errors_by_line(job)
    assert sorted(errors) == [8, 9, 10, 11, 12, 13, 14, 15, 16, 19, 20, 21]
    assert "no answer key (only test rows may lack one" in errors[8]
    assert "missing columns: hint" in errors[9] or "missing columns:" in errors[9]
    assert "not valid base64" in errors[10]
    assert "not a usable image" in errors[11]
    assert "answer 'C' is not among the non-empty options (A-B)" in errors[12]
    assert "fewer than 2 options" in errors[13]
    assert "repeated options: A and C" in errors[14]
    assert "duplicate index 3 (first on line 4)" in errors[15]
    assert "refers to index 999, which no row of the file has" in errors[16]
    assert "circular copy 3 of index 99, whose own row is not in the file" in errors[19]
    assert "option B is empty but a later option is not" in errors[20]
    assert "index 7, which was not imported" in errors[21]
    assert all(message.startswith(f"line {line}: ") for line, message in errors.items())

    items = {i.external_id: i for i in Item.objects.filter(benchmark=external)}
    assert sorted(items, key=int) == ["1", "2", "3", "4", "13", "14"]
    assert all(i.is_external and i.kind == "mcq" and i.status == "accepted" for i in items.values())
    assert items["2"].choices == ["yes", "no"] and items["2"].answer == "B"
    assert items["3"].choices == ["red", "green", "blue"] and items["3"].answer == "C"
    assert items["4"].answer == "" and ExternalSource.objects.get(item=items["4"]).split == "test"
    # Shared images are stored once and linked to every row that names them, before or after it.
    image_of = lambda item: [link.image_id for link in item.item_images.all()]  # noqa: E731
    assert image_of(items["2"]) == image_of(items["1"])
    assert len(image_of(items["14"])) == 2 and image_of(items["13"]) == image_of(items["14"])
    assert Image.objects.filter(benchmark=external).count() == 3
    assert set(Image.objects.filter(benchmark=external).values_list("status", flat=True)) == {"accepted"}
    # Circular copies collapse into their original row.
    source = ExternalSource.objects.get(item=items["1"])
    assert source.copies == ["1000001", "2000001"] and source.line == 2 and source.index == "1"
    assert job.entries.get(key="line 5").outcome == "skipped"
    # The file's category and l2-category became the task and its category.
    assert items["1"].task.name == "object recognition" and items["1"].task.category.name == "perception"
    assert job.result["imported"] == 6 and job.result["circular_copies"] == 2 and job.result["errors"] == 12
    assert job.result["without_answer"] == 1

    # Importing the same file again adds nothing and repeats the same errors.
    again = run_import(external, researcher, tsv(ROWS))
    again.refresh_from_db()
    assert again.result["imported"] == 0 and again.result["already_imported"] == 6
    assert Item.objects.filter(benchmark=external).count() == 6


def test_a_tsv_without_the_needed_columns_is_refused_whole(external, researcher, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        job = run_import(external, researcher, b"index\tquestion\tA\n1\tq\tx\n")
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and "lacks the column(s) B, image" in job.message


@pytest.mark.django_db(transaction=True)
def test_a_large_tsv_is_streamed_not_read_whole(external, researcher, tmp_path, fresh_image_indexes):
    noise = np.random.default_rng(9).integers(0, 256, (700, 700, 3), dtype=np.uint8)
    big = b64(encode(PILImage.fromarray(noise, "RGB"), "PNG"))  # noise does not compress: ~2 MB of base64
    rows = [row(n, image=big) for n in range(40)]
    path = tmp_path / "big.tsv"
    path.write_bytes(tsv(rows))
    size = path.stat().st_size
    assert size > 75_000_000

    tracemalloc.start()
    try:
        job = imports.import_path(external, path, user=researcher)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert job.status == Job.Status.SUCCEEDED, job.message
    assert job.result["imported"] == 40
    # What one row takes (its base64, the decoded file, the decoded picture), not the file: a row is ~2 MB.
    assert peak < size / 3, f"peak {peak / 1e6:.1f} MB for a {size / 1e6:.1f} MB file"


@pytest.mark.django_db(transaction=True)
def test_a_failed_import_resumes_after_the_rows_it_had_done(external, researcher, monkeypatch, fresh_image_indexes):
    rows = [row(n, image=b64(jpeg(20 + n))) for n in range(1, 8)]
    real = Ingester._store
    calls = []

    def failing(*args, **kwargs):
        calls.append(1)
        if len(calls) == 5:
            raise RuntimeError("disk full")
        return real(*args, **kwargs)

    monkeypatch.setattr(imports, "CHUNK", 2)
    monkeypatch.setattr(imports, "INGEST_BATCH", 1)  # each image its own batch: the fifth one fails
    monkeypatch.setattr(Ingester, "_store", failing)
    job = run_import(external, researcher, tsv(rows))
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and "disk full" in job.message
    assert Item.objects.filter(benchmark=external).count() == 4

    monkeypatch.setattr(Ingester, "_store", real)
    jobs.run_now(jobs.requeue(job))
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED and job.result["imported"] == 7
    assert sorted(Item.objects.filter(benchmark=external).values_list("external_id", flat=True), key=int) == [
        str(n) for n in range(1, 8)
    ]


def test_mllm_bench_questions_import_with_their_criteria(researcher, django_capture_on_commit_callbacks):
    path = shared_fixture("mllm-bench", "questions.jsonl")
    with django_capture_on_commit_callbacks(execute=True):
        job = imports.start_import(
            user=researcher,
            file=SimpleUploadedFile("questions.jsonl", path.read_bytes()),
            format=imports.MLLM_BENCH,
            name="MLLM-Bench",
        )
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED, job.message
    benchmark = Benchmark.objects.get(pk=job.benchmark_id)
    assert benchmark.is_external
    errors = list(job.entries.filter(outcome="error").values_list("message", flat=True))
    assert len(errors) == 1 and "question_type 'https://" in errors[0] and errors[0].startswith("line ")
    assert job.result["imported"] == 419
    item = Item.objects.get(benchmark=benchmark, external_id="0")
    assert item.question_type == "compound" and item.task.name == "General Object Recognition"
    assert item.task.category.name == "Perception/Remembering"
    assert [c.text for c in item.criteria.all()][0].startswith("Identify if the response correctly recognizes")


def test_mllm_bench_json_list_and_bad_rows(researcher, django_capture_on_commit_callbacks):
    data = b'[{"id": 1, "question": "Why?", "level": "L", "capability": "C", "question_type": "open-ended"}, {"question": "no id"}, 5]'
    with django_capture_on_commit_callbacks(execute=True):
        job = imports.start_import(
            user=researcher, file=SimpleUploadedFile("q.json", data), format=imports.MLLM_BENCH, name="Small"
        )
    job.refresh_from_db()
    assert job.result["imported"] == 1
    # All three elements are on line 1: each is named by its line and its place in the list.
    errors = {e.key: e.message for e in job.entries.filter(outcome="error")}
    assert errors == {
        "line 1, element 2": "line 1, element 2: missing fields: id",
        "line 1, element 3": "line 1, element 3: expected a JSON object, not a number",
    }


def test_alignmmbench_goes_through_annotations_importer(researcher, django_capture_on_commit_callbacks):
    line = '{"question_id": "00000001-0", "image_path": "a.jpg", "history": [], "prompt": "What is it?", "ref_answer": "A cat.", "task": "Description", "category": "Perception & Understanding"}\n'
    with django_capture_on_commit_callbacks(execute=True):
        job = imports.start_import(
            user=researcher, file=SimpleUploadedFile("metadata.jsonl", line.encode()), format=imports.ALIGNMMBENCH, name="Align"
        )
    job.refresh_from_db()
    assert job.kind == "import_alignmmbench" and job.status == Job.Status.SUCCEEDED, job.message
    assert Benchmark.objects.get(pk=job.benchmark_id).is_external
    assert Item.objects.filter(benchmark_id=job.benchmark_id, external_id="00000001-0", is_external=True).exists()
