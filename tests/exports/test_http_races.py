"""The race kit over HTTP: gunicorn with several worker processes (DEBUG off) and a Celery worker
on Postgres and Redis, as deployed; one barrier releases a mixed burst at once (a release build
pressed twice, "assign evenly" pressed by several researchers, annotators' "next" and starting
their assignments, the same image uploaded by several people). No answer is a 5xx or a dropped
connection, the invariants of tests/races.py hold, nothing is there twice. The in-process race
tests (tests/*/test_races.py) stay: they race each rule alone through the test client."""

import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from django.conf import settings as django_settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore

from annotation.models import Assignment
from benchforge.auth import create_token_for
from curation.models import Image
from exports import services as releases
from exports.models import Release
from tests.conftest import REPO_ROOT
from tests.factories import jpeg
from tests.jobs.workers import wait_for
from tests.races import broken, rows

pytestmark = pytest.mark.services


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def gunicorn(celery_workers, tmp_path, settings):
    """gunicorn (3 worker processes x 4 threads, DEBUG off) on a free loopback port, sharing the test
    database, media folder and job queue with the Celery workers of `celery_workers`."""
    port = _free_port()
    settings.SECRET_KEY = secrets.token_hex(32)  # DEBUG off wants its own; the sessions made here are signed with it
    env = dict(
        celery_workers.env,
        DEBUG="false",
        SECRET_KEY=settings.SECRET_KEY,
        ALLOWED_HOSTS="127.0.0.1",
        BENCHFORGE_SSL_REDIRECT="0",
        BENCHFORGE_SECURE_COOKIES="0",
        LOG_LEVEL="WARNING",
    )
    log = (tmp_path / "gunicorn.log").open("w")
    command = [str(Path(sys.executable).with_name("gunicorn")), "benchforge.wsgi:application"]
    command += ["--bind", f"127.0.0.1:{port}", "--workers", "3", "--threads", "4"]
    proc = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/accounts/login/", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "gunicorn.log").read_text()[-3000:]
            time.sleep(0.5)
        celery_workers.start()
        yield f"http://127.0.0.1:{port}"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()
        print((tmp_path / "gunicorn.log").read_text()[-3000:])


class Person:
    """A logged-in person over HTTP: a session (with the CSRF cookie and header) for pages, a token for the API."""

    def __init__(self, base: str, user):
        backend = next(path for path in django_settings.AUTHENTICATION_BACKENDS if "axes" not in path)
        session = SessionStore()
        session[SESSION_KEY], session[BACKEND_SESSION_KEY] = str(user.pk), backend
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.create()
        self.base, self.cookie, self.token = base, session.session_key, create_token_for(user)

    def page(self, path: str, data: dict):
        csrf = secrets.token_hex(16)
        with httpx.Client(base_url=self.base, cookies={"sessionid": self.cookie, "csrftoken": csrf}, timeout=120) as client:
            return client.post(path, data=data, headers={"X-CSRFToken": csrf, "Referer": self.base + "/"})

    def api(self, path: str, **kwargs):
        with httpx.Client(base_url=self.base, headers={"Authorization": f"Token {self.token}"}, timeout=120) as client:
            return client.post(path, **kwargs)


def burst(calls: list) -> list[tuple[int, str]]:
    """Each call in its own thread, all released by one barrier: (status, text) in order; 599 for no answer."""
    barrier = threading.Barrier(len(calls))
    answers: list = [None] * len(calls)

    def run(n, call):
        try:
            barrier.wait(60)
            response = call()
            answers[n] = (response.status_code, response.headers.get("location") or response.text)
        except Exception as exc:  # a dropped connection is an answer the user never got
            answers[n] = (599, f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=run, args=(n, call)) for n, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    return answers


def test_a_mixed_burst_over_http_against_several_workers_breaks_nothing(
    gunicorn, benchmark, researcher, annotator, make_user, counting, accepted
):
    from annotation import services as annotation
    from curation.services import ingest_image

    otto = make_user("annotator", "otto", benchmarks=[benchmark])
    rita = make_user("researcher", "rita")
    ocr = benchmark.tasks.get(slug="ocr")
    counting.quota = 20
    counting.save()
    for n in range(40):
        ingest_image(benchmark, jpeg(9300 + n), tasks=[counting])
    Image.objects.filter(benchmark=benchmark).update(status=Image.Status.ACCEPTED)
    mine = [ingest_image(benchmark, jpeg(9400 + n), tasks=[ocr]).image.pk for n in range(8)]
    Image.objects.filter(pk__in=mine).update(status=Image.Status.ACCEPTED)
    annotation.assign_images(benchmark, task=ocr, image_ids=mine, assignee=annotator, user=researcher)
    starts = list(Assignment.objects.filter(image_id__in=mine, status="open").values_list("pk", flat=True))
    release = releases.create_release(benchmark, user=researcher, version="4.5.9")
    same_image = jpeg(9500)
    handed_before = Assignment.objects.filter(task=counting, image__isnull=False).count()

    people = {
        name: Person(gunicorn, user) for name, user in (("ross", researcher), ("rita", rita), ("anna", annotator), ("otto", otto))
    }
    evenly = {"form": "evenly", "tasks": ["counting"], "assignees": ["anna", "otto"]}
    build = f"/api/v1/benchmarks/demo/releases/{release.version}/build/"
    calls = [lambda p=people[who]: p.page("/b/demo/assign/", evenly) for who in ("ross", "rita", "ross", "rita")]
    calls += [lambda p=people[who]: p.api(build) for who in ("ross", "rita")]
    calls += [lambda p=people[who]: p.page("/b/demo/queue/next/", {}) for who in ("anna", "otto", "anna", "otto")]
    calls += [lambda pk=pk: people["anna"].page(f"/b/demo/queue/{pk}/", {}) for pk in starts]
    upload = {"tasks": ["chart"], "source": "burst", "license": "CC0"}
    calls += [
        lambda p=people[who]: p.api(
            "/api/v1/benchmarks/demo/images/", data=upload, files={"files": ("same.jpg", same_image, "image/jpeg")}
        )
        for who in ("anna", "otto", "ross", "rita")
    ]

    answers = burst(calls)

    failed = [(n, answer) for n, answer in enumerate(answers) if answer[0] >= 500]
    assert failed == [], failed  # no 5xx, no dropped connection
    assert all(status < 400 or status == 409 for status, _ in answers), answers
    built = wait_for(
        lambda: Release.objects.filter(pk=release.pk, status__in=["built", "draft"]).first(), timeout=240, what="the build"
    )
    assert built.status == Release.Status.BUILT
    assert rows("SELECT count(*) FROM exports_release WHERE id = %s", [release.pk]) == [(1,)]
    assert Image.objects.filter(benchmark=benchmark, md5=Image.objects.filter(source="burst").first().md5).count() == 1
    handed = Assignment.objects.filter(task=counting, image__isnull=False).count()
    assert handed_before < handed <= counting.quota, (handed_before, handed, answers[:4])
    started = answers[10 : 10 + len(starts)]  # after 4 "assign evenly", 2 builds and 4 "next"
    assert all(status == 302 and "/b/demo/items/" in where for status, where in started), started
    items = list(Assignment.objects.filter(pk__in=starts).values_list("item_id", flat=True))
    assert None not in items and len(set(items)) == len(starts)  # each started once, with its own draft
    uploads = [json.loads(text)["results"][0]["outcome"] for _, text in answers[-4:]]
    assert sorted(uploads) == ["added", "duplicate", "duplicate", "duplicate"], answers[-4:]
    duplicates = rows(
        "SELECT image_id, task_id, count(*) FROM annotation_assignment WHERE status = 'open' AND image_id IS NOT NULL "
        "GROUP BY image_id, task_id HAVING count(*) > 1"
    )
    assert duplicates == []
    assert broken() == {}
