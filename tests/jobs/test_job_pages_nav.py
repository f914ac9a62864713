"""Job and known-set pages: human names for job kinds, and the benchmark's navigation kept for its members."""

import pytest

from curation.services import import_known_set
from jobs.services import create_job

pytestmark = pytest.mark.django_db


@pytest.fixture
def people(make_user, benchmark, private_benchmark):
    return {
        "researcher": make_user("researcher", "ross", benchmarks=[benchmark]),
        "annotator": make_user("annotator", "anna", benchmarks=[benchmark]),
        "stranger": make_user("annotator", "sam", benchmarks=[private_benchmark]),
    }


def test_job_pages_are_titled_with_the_kind_and_keep_the_benchmark_navigation(client_for, people, benchmark):
    job = create_job("ingest_zip", user=people["researcher"], benchmark=benchmark, params={})
    # A result key named like a dict method renders as a row; keys read as words, nested counts too.
    job.result = {"items": 3, "added": 2, "files_in_no_task_folder": 2, "rewrite": {"kept": 5, "too_short": 1}}
    job.save(update_fields=["result"])
    page = client_for(people["annotator"]).get(f"/jobs/{job.pk}/")
    html = page.content.decode()
    assert page.status_code == 200
    assert f"<title>Zip import #{job.pk} · benchforge</title>" in html and f"<h1>Zip import #{job.pk}</h1>" in html
    assert "ingest_zip" not in html
    assert "<th>Items</th><td>3</td>" in html
    assert "<th>Files in no task folder</th><td>2</td>" in html and "files_in_no_task_folder" not in html
    assert "<th>Rewrite</th><td>kept: 5, too short: 1</td>" in html
    assert 'href="/b/demo/"' in html and 'data-stage="author"' in html  # the benchmark's navigation
    listing = client_for(people["annotator"]).get("/jobs/?benchmark=demo").content.decode()
    assert f"Zip import #{job.pk}" in listing and 'data-stage="author"' in listing


def test_job_pages_show_no_navigation_of_a_benchmark_the_user_is_not_in(client_for, people, benchmark):
    listing = client_for(people["stranger"]).get("/jobs/?benchmark=demo").content.decode()
    assert 'href="/b/demo/' not in listing


def test_known_set_pages_keep_the_navigation_of_the_benchmark_they_were_opened_from(client_for, people, benchmark):
    client = client_for(people["researcher"])
    collect = client.get("/b/demo/images/").content.decode()  # a page of the Collect stage lists its pages
    assert 'href="/known-sets/?from=demo"' in collect
    page = client.get("/known-sets/?from=demo").content.decode()
    assert 'data-stage="author"' in page and 'name="from" value="demo"' in page
    assert 'data-stage="author"' not in client.get("/known-sets/?from=nope").content.decode()
    known = import_known_set(name="prior", rows=[{"md5": "0" * 32, "phash": None}], user=people["researcher"]).known_set
    deleted = client.post(f"/known-sets/{known.pk}/delete/", {"from": "demo"})
    assert deleted["Location"] == "/known-sets/?from=demo"
