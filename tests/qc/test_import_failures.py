"""A problem of the file leaves nothing behind; a problem of a row is that row's.

Every import reads its file through benchforge_harness.tabular: a byte that is not UTF-8 is named on its own
line (never the line where an 8 KB chunk happened to start), and fails the import before anything
is stored, removing the benchmark made for it. A value nested 100,000 deep is one row's problem,
never a RecursionError. Each test counts items, images and benchmarks before and after."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import Item
from curation.models import Benchmark, Image, KnownHash, KnownImageSet
from curation.services import create_benchmark, parse_hash_list, parse_url_list
from jobs import services as jobs
from jobs.models import Job
from qc.services import imports
from tests.factories import jpeg
from tests.qc.test_imports import b64, row, tsv

pytestmark = pytest.mark.django_db
DEEP = "[" * 100_000 + "]" * 100_000


def counts():
    return Item.objects.count(), Image.objects.count(), Benchmark.objects.count()


def big_tsv(n_rows: int) -> bytes:
    """Rows with their own images: each line is kB long, so 8 KB chunks start mid-file."""
    return tsv([row(i, question=f"Question {i}?", image=b64(jpeg(i, size=(96, 80)))) for i in range(1, n_rows + 1)])


def with_bad_byte(data: bytes, line: int) -> bytes:
    """The file with a byte that is not UTF-8 put into the question of `line` (1 = the header)."""
    lines = data.split(b"\n")
    lines[line - 1] = lines[line - 1].replace(b"Question", b"Quest\xffion", 1)
    assert b"\xff" in lines[line - 1]
    return b"\n".join(lines)


def start(researcher, data: bytes, *, name="bench.tsv", fmt=imports.MMBENCH_TSV, benchmark=None, capture=None, called="Imported"):
    with capture(execute=True):
        job = imports.start_import(
            user=researcher,
            file=SimpleUploadedFile(name, data),
            format=fmt,
            benchmark=benchmark,
            name="" if benchmark else called,
        )
    job.refresh_from_db()
    return job


@pytest.mark.parametrize("where", ["early", "mid-file", "last line"])
def test_a_bad_byte_fails_the_import_on_its_line_and_leaves_nothing(
    where, researcher, client_for, django_capture_on_commit_callbacks, fresh_image_indexes
):
    client = client_for(researcher)
    data = big_tsv(60)
    line = {"early": 2, "mid-file": 41, "last line": 61}[where]
    data = with_bad_byte(data, line)
    if where == "last line":
        data = data.rstrip(b"\n")  # and no newline after it
    before = counts()

    job = start(researcher, data, capture=django_capture_on_commit_callbacks)

    assert job.status == Job.Status.FAILED
    assert f"line {line} is not UTF-8 text (byte 0xff at column " in job.message, job.message
    assert "Nothing was imported" in job.message and "'Imported' made for this import was removed" in job.message
    assert counts() == before  # no item, no image, no empty benchmark
    assert job.benchmark_id is None and not job.entries.exists()
    assert client.get(f"/qc/import/?job={job.pk}").status_code == 200
    assert f"line {line} is not UTF-8" in client.get(f"/jobs/{job.pk}/").content.decode()

    # Resuming the refused import explains what to do instead of failing on the same byte again.
    with django_capture_on_commit_callbacks(execute=True):
        jobs.resume(job, user=researcher)
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and "start a new import with the corrected file" in job.message
    assert counts() == before


def test_a_bad_byte_in_an_existing_benchmark_keeps_the_benchmark_and_adds_nothing(
    researcher, django_capture_on_commit_callbacks, fresh_image_indexes
):
    benchmark = create_benchmark(name="Mine", user=researcher)
    before = counts()
    job = start(researcher, with_bad_byte(big_tsv(30), 25), benchmark=benchmark, capture=django_capture_on_commit_callbacks)
    assert job.status == Job.Status.FAILED and "line 25 is not UTF-8" in job.message
    assert "removed" not in job.message
    assert counts() == before and Benchmark.objects.filter(pk=benchmark.pk).exists()


def test_too_many_bad_rows_refuse_the_whole_file_before_storing_any(
    researcher, django_capture_on_commit_callbacks, fresh_image_indexes
):
    rows = [row(1, image=b64(jpeg(1, size=(96, 80))))] + [row(i, answer="E", image="1") for i in range(2, 400)]
    before = counts()
    job = start(researcher, tsv(rows), capture=django_capture_on_commit_callbacks)
    assert job.status == Job.Status.FAILED
    assert "more than 200 rows have problems" in job.message and "line 3: answer 'E'" in job.message
    assert counts() == before


def test_deep_nesting_in_a_tsv_image_cell_is_that_rows_problem(
    researcher, django_capture_on_commit_callbacks, fresh_image_indexes
):
    rows = [row(1, image=b64(jpeg(1, size=(96, 80)))), row(2, image=DEEP), row(3, image="1")]
    before = counts()
    job = start(researcher, tsv(rows), capture=django_capture_on_commit_callbacks)
    assert job.status == Job.Status.SUCCEEDED, job.message
    (error,) = job.entries.filter(outcome="error")
    assert error.key == "line 3" and "flat list" in error.message
    items, images, benchmarks = counts()
    assert (items, images, benchmarks) == (before[0] + 2, before[1] + 1, before[2] + 1)


def test_deep_nesting_in_an_mllm_bench_line_is_that_rows_problem(researcher, django_capture_on_commit_callbacks):
    good = {"id": 1, "question": "Why?", "level": "L", "capability": "C"}
    lines = [json.dumps(good), '{"id": 2, "question": ' + DEEP + "}", json.dumps({**good, "id": 3})]
    before = counts()
    job = start(
        researcher, "\n".join(lines).encode(), name="q.jsonl", fmt=imports.MLLM_BENCH, capture=django_capture_on_commit_callbacks
    )
    assert job.status == Job.Status.SUCCEEDED, job.message
    (error,) = job.entries.filter(outcome="error")
    assert error.message == "line 2: it is nested more than 64 levels deep"
    assert counts() == (before[0] + 2, before[1], before[2] + 1)


def test_deep_nesting_in_a_json_list_is_that_elements_problem(researcher, django_capture_on_commit_callbacks):
    good = {"id": 1, "question": "Why?"}
    data = f"[\n{json.dumps(good)},\n{DEEP},\n{json.dumps({**good, 'id': 3})}\n]".encode()
    before = counts()
    job = start(researcher, data, name="q.json", fmt=imports.MLLM_BENCH, capture=django_capture_on_commit_callbacks)
    assert job.status == Job.Status.SUCCEEDED, job.message
    (error,) = job.entries.filter(outcome="error")
    assert error.message == "line 3, element 2: it is nested more than 64 levels deep"
    assert counts() == (before[0] + 2, before[1], before[2] + 1)


def test_a_json_list_that_never_closes_leaves_nothing(researcher, django_capture_on_commit_callbacks):
    before = counts()
    job = start(
        researcher, b'[{"id": 1, "question": "Why?"},\n' + b"[" * 100_000, name="q.json", fmt=imports.MLLM_BENCH,
        capture=django_capture_on_commit_callbacks,
    )  # fmt: skip
    assert job.status == Job.Status.FAILED and "does not close" in job.message
    assert counts() == before


def alignmmbench_line(qid: str, **extra) -> str:
    return json.dumps(
        {"question_id": qid, "image_path": "a.jpg", "history": [], "prompt": "What?", "ref_answer": "This.",
         "task": "Description", "category": "Perception & Understanding", **extra}
    )  # fmt: skip


def test_alignmmbench_deep_nesting_is_a_row_problem_and_a_bad_byte_leaves_nothing(researcher, django_capture_on_commit_callbacks):
    before = counts()
    data = "\n".join([alignmmbench_line("00000001-0"), '{"question_id": ' + DEEP + "}", alignmmbench_line("00000002-0")])
    job = start(
        researcher, data.encode(), name="metadata.jsonl", fmt=imports.ALIGNMMBENCH, capture=django_capture_on_commit_callbacks
    )
    assert job.status == Job.Status.SUCCEEDED, job.message
    (error,) = job.entries.filter(outcome="error")
    assert "line 2: it is nested more than 64 levels deep" in error.message
    assert counts() == (before[0] + 2, before[1], before[2] + 1)

    before = counts()
    data = (alignmmbench_line("00000003-0") + "\n" + alignmmbench_line("00000004-0")).encode()
    data = data.replace(b"This.", b"Th\xe9s.", 2)  # latin-1 é on line 1 and line 2
    job = start(
        researcher, data, name="metadata.jsonl", fmt=imports.ALIGNMMBENCH, capture=django_capture_on_commit_callbacks,
        called="Second",
    )  # fmt: skip
    assert job.status == Job.Status.FAILED and "line 1 is not UTF-8 text (byte 0xe9" in job.message
    assert counts() == before


def test_hash_and_url_lists_refuse_deep_nesting_and_bad_bytes_by_line():
    from benchforge.errors import DomainError

    md5 = "d41d8cd98f00b204e9800998ecf8427e"
    with pytest.raises(DomainError, match="line 2: it is nested more than 64 levels deep"):
        parse_hash_list(f'{{"md5": "{md5}"}}\n{{"md5": {DEEP}}}\n'.encode(), "known.jsonl")
    with pytest.raises(DomainError, match=r"line 3 is not UTF-8 text \(byte 0xff at column 6\)"):
        parse_hash_list(f"md5\n{md5}\n{md5[:5]}\xff".encode("latin-1"), "known.csv")
    with pytest.raises(DomainError, match=r"line 2 is not UTF-8 text"):
        parse_url_list(b"http://a/1.jpg\nhttp://a/\xff.jpg\n")
    assert KnownHash.objects.count() == 0 and KnownImageSet.objects.count() == 0


def test_every_rows_problem_is_listed_through_the_api(researcher, api_for, make_user, django_capture_on_commit_callbacks):
    lines = [json.dumps({"id": n, "question": "Why?"}) for n in range(1, 11)]
    lines += [json.dumps({"id": n}) for n in range(11, 71)]  # 60 rows without a question
    job = start(
        researcher, "\n".join(lines).encode(), name="q.jsonl", fmt=imports.MLLM_BENCH, capture=django_capture_on_commit_callbacks
    )
    assert job.status == Job.Status.SUCCEEDED and job.result["errors"] == 60
    api = api_for(researcher)
    detail = api.get(f"/api/v1/jobs/{job.pk}/").json()
    first = api.get(detail["entries"], {"outcome": "error"}).json()
    assert first["count"] == 60 and len(first["results"]) == 50 and first["next"]
    rest = api.get(first["next"]).json()
    listed = [e["message"] for e in first["results"] + rest["results"]]
    assert listed == [f"line {n}: missing fields: question" for n in range(11, 71)]
    assert api.get(detail["entries"]).json()["count"] == 70
    assert api.get(detail["entries"], {"outcome": "bogus"}).status_code == 400
    outsider = api_for(make_user("annotator", "otto"))
    assert outsider.get(detail["entries"]).status_code == 404


def with_stray_quote(data: bytes, line: int) -> bytes:
    """The file with a quote mark that never closes at the start of the question on `line`."""
    lines = data.split(b"\n")
    cells = lines[line - 1].split(b"\t")
    cells[1] = b'"' + cells[1]
    lines[line - 1] = b"\t".join(cells)
    return b"\n".join(lines)


@pytest.mark.parametrize("line", [11, 121])
def test_a_quote_that_never_closes_refuses_the_whole_file_naming_its_line(
    line, researcher, django_capture_on_commit_callbacks, fresh_image_indexes
):
    # 156 lines: the header and 155 rows. The csv module read the rest of the file into one cell
    # (9 items imported and 146 lines gone without an error); pandas refuses the file.
    data = with_stray_quote(big_tsv(155), line)
    assert data.count(b"\n") == 156
    before = counts()
    job = start(researcher, data, capture=django_capture_on_commit_callbacks)
    assert job.status == Job.Status.FAILED
    assert f"the quoted cell that opens on line {line} never closes" in job.message, job.message
    assert "Nothing was imported" in job.message
    assert counts() == before and not job.entries.exists()


def test_a_balanced_leading_quote_imports_as_pandas_reads_it(researcher, django_capture_on_commit_callbacks, fresh_image_indexes):
    data = tsv([row(1, question="QUESTION", image=b64(jpeg(1)))]).replace(b"QUESTION", b'"Stop" sign: what does it mean?')
    job = start(researcher, data, capture=django_capture_on_commit_callbacks)
    assert job.status == Job.Status.SUCCEEDED, job.message
    assert list(Item.objects.filter(benchmark_id=job.benchmark_id).values_list("question", flat=True)) == [
        "Stop sign: what does it mean?"
    ]
