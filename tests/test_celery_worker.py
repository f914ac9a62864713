"""A real Celery worker on a Redis broker runs our tasks against the same Postgres database.

Needs DATABASE_URL on Postgres (a worker process cannot see SQLite's in-memory test DB)
and a Redis server (BENCHFORGE_TEST_REDIS_URL, default redis://127.0.0.1:6379/15).
"""

import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import quote, urlparse

import pytest
from django.db import connection

from tests.conftest import REPO_ROOT, require

REDIS_URL = os.environ.get("BENCHFORGE_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def _port_open(url: str) -> bool:
    parsed = urlparse(url)
    try:
        with socket.create_connection((parsed.hostname, parsed.port or 6379), timeout=1):
            return True
    except OSError:
        return False


def _test_database_url() -> str:
    s = connection.settings_dict
    auth = quote(s["USER"]) + (f":{quote(s['PASSWORD'])}" if s.get("PASSWORD") else "") + "@" if s.get("USER") else ""
    return f"postgres://{auth}{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


@pytest.fixture
def celery_worker_process(transactional_db, tmp_path):
    require(connection.vendor == "postgresql", "Postgres via DATABASE_URL (the worker shares the test database)")
    require(_port_open(REDIS_URL), f"a Redis broker at {REDIS_URL}")
    queue = f"benchforge-test-{uuid.uuid4().hex[:8]}"
    env = dict(os.environ, DATABASE_URL=_test_database_url(), CELERY_BROKER_URL=REDIS_URL,
               MEDIA_ROOT=str(tmp_path / "media"), PYTHONPATH=str(REPO_ROOT))
    log = (tmp_path / "worker.log").open("w")
    proc = subprocess.Popen(
        [str(Path(sys.executable).with_name("celery")), "-A", "benchforge", "worker", "--pool=solo", "-Q", queue,
         "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel=INFO"],
        cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    from benchforge.celery import app

    app.conf.task_always_eager = False
    try:
        # An explicit connection: the app's own broker setting stays what the settings say.
        with app.connection_for_write(REDIS_URL) as conn:
            yield {"queue": queue, "connection": conn}
    finally:
        app.conf.task_always_eager = True
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        print((tmp_path / "worker.log").read_text()[-3000:])


def test_worker_runs_a_preset_load_as_a_tracked_job(celery_worker_process, researcher):
    from celery.result import EagerResult

    from curation.services import create_benchmark
    from curation.tasks import load_preset_task
    from jobs.models import Job

    benchmark = create_benchmark(name="Remote", user=researcher)
    result = load_preset_task.apply_async(args=["mllm-bench", benchmark.pk, researcher.pk], **celery_worker_process)
    assert not isinstance(result, EagerResult)  # queued on Redis for the worker, not run here
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        job = Job.objects.filter(benchmark=benchmark, kind="load_preset").first()
        if job and job.is_finished:
            break
        time.sleep(0.2)
    else:
        pytest.fail("the worker did not finish the job within 60 s (see the worker log above)")
    assert job.status == Job.Status.SUCCEEDED, job.message
    assert benchmark.tasks.count() == 42
    assert job.created_by == researcher and job.result == {"tasks": 42}
