"""Real Celery workers on a Redis broker, sharing the test's Postgres database and media folder.

Needs DATABASE_URL on Postgres (a worker process cannot see SQLite's in-memory test database) and
a Redis server (BENCHFORGE_TEST_REDIS_URL, default redis://127.0.0.1:6379/15; each xdist worker its own
database, tests/conftest.py). Jobs the test
enqueues go to a queue of its own, which only these workers listen to.
"""

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import quote, urlparse

import pytest
from django.db import connection

from tests.conftest import REDIS_URL, REPO_ROOT, require


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


class Workers:
    def __init__(self, tmp_path, queue, env):
        self.tmp_path, self.queue, self.env = tmp_path, queue, env
        self.procs: list[subprocess.Popen] = []

    def start(self, app: str = "benchforge", concurrency: int = 1) -> subprocess.Popen:
        n = len(self.procs)
        log = (self.tmp_path / f"worker-{n}.log").open("w")
        pool = ["--pool=solo"] if concurrency == 1 else [f"--concurrency={concurrency}"]
        proc = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("celery")),
                "-A",
                app,
                "worker",
                *pool,
                "-Q",
                self.queue,
                "-n",
                f"test{n}-{self.queue}@%h",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "--loglevel=INFO",
            ],
            cwd=REPO_ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        proc.log = log
        self.procs.append(proc)
        return proc

    def kill(self, proc) -> None:
        """SIGKILL the worker and its children: no clean-up runs, like a machine losing power."""
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=20)

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
            proc.log.close()

    def logs(self) -> str:
        return "\n".join((self.tmp_path / f"worker-{n}.log").read_text()[-3000:] for n in range(len(self.procs)))


def celery_workers_for(tmp_path, settings):
    """Start workers with `celery_workers.start()`; jobs this test enqueues are sent to them."""
    require(connection.vendor == "postgresql", "Postgres via DATABASE_URL (the worker shares the test database)")
    require(_port_open(REDIS_URL), f"a Redis broker at {REDIS_URL}")
    queue = f"benchforge-test-{uuid.uuid4().hex[:8]}"
    env = dict(
        os.environ,
        DATABASE_URL=_test_database_url(),
        CELERY_BROKER_URL=REDIS_URL,
        BENCHFORGE_JOB_QUEUE=queue,
        BENCHFORGE_JOB_HEARTBEAT_SECONDS="0.5",
        MEDIA_ROOT=str(settings.MEDIA_ROOT),
        PYTHONPATH=str(REPO_ROOT),
    )
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    from benchforge.celery import app

    settings.BENCHFORGE_JOB_RUNNER = "celery"
    settings.BENCHFORGE_JOB_QUEUE = queue
    previous = app.conf.broker_url, app.conf.task_always_eager
    app.conf.broker_url, app.conf.task_always_eager = REDIS_URL, False
    workers = Workers(tmp_path, queue, env)
    try:
        yield workers
    finally:
        app.conf.broker_url, app.conf.task_always_eager = previous
        workers.stop_all()
        print(workers.logs())


def wait_for(predicate, timeout: float = 60, what: str = "the job"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what} (see the worker logs above)")


def kill_with_every_counted_request_sent(workers, proc, *, fake_llm, job, latency: float, hold: float = 10.0) -> None:
    """SIGKILL a worker calling `fake_llm` at a moment when every request its job counted in the
    usage ledger has reached the server. The ledger counts a request just before sending it, so
    a kill falling between the two leaves one counted that the server never got (and counting
    after the send would leave one received and never counted: no order of two steps survives a
    SIGKILL between them). Replies are held back for `hold` seconds, so the worker's calls stop
    at the server with their slots held; once the ledger equals what the server received and
    nothing new arrived for a second, nothing is between its count and its send. Then replies go
    back to `latency` (the held calls, older than that, are answered at once: their replies go to
    the dead worker), and this returns once they have ended at the server: the slots they hold
    expire after their lease, and a restarted worker taking them while the server still held the
    dead calls would be counted against the bound."""
    from llm.selectors import sent_requests

    fake_llm.set_latency(hold)
    seen = {"n": -1, "since": time.monotonic()}

    def settled() -> bool:
        received = len(fake_llm.requests())
        if received != seen["n"]:
            seen["n"], seen["since"] = received, time.monotonic()
            return False
        return time.monotonic() - seen["since"] >= 1 and sent_requests([job.pk]) == received

    wait_for(settled, timeout=60, what="every counted request to reach the server")
    workers.kill(proc)
    fake_llm.set_latency(latency)
    wait_for(lambda: fake_llm.in_flight() == 0, timeout=hold + 60, what="the killed worker's held calls to end")
