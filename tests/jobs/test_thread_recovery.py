"""The embedded runtime (no broker: jobs run in threads of `manage.py serve`, as `make run` starts
it) recovers too: a job queued by a server that is gone runs in the next one, and a job whose
server was SIGKILLed mid-run comes back by itself once a server is started again, with no unit
lost and none done twice. Real server processes on the test's Postgres database."""

import os
import re
import signal
import subprocess
import sys

import pytest
from django.db import connection

from jobs import services as jobs
from jobs.models import Job, JobEntry
from tests.conftest import REPO_ROOT, require
from tests.jobs.toy import TOY
from tests.jobs.workers import _test_database_url, wait_for

pytestmark = pytest.mark.services

# `manage.py serve` with the toy job kind registered (as an app would register its kinds).
SERVE = """
import django, sys
django.setup()
from tests.jobs import toy  # noqa: F401
from django.core.management import call_command
call_command("serve", "--noreload", "--skip-checks", "127.0.0.1:0")
"""


class Servers:
    def __init__(self, tmp_path, env):
        self.tmp_path, self.env, self.procs = tmp_path, env, []

    def start(self) -> subprocess.Popen:
        log = (self.tmp_path / f"serve-{len(self.procs)}.log").open("w")
        proc = subprocess.Popen(
            [sys.executable, "-c", SERVE],
            cwd=REPO_ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        proc.log, proc.n = log, len(self.procs)
        self.procs.append(proc)
        wait_for(lambda: "benchforge is running" in self.log(proc), timeout=120, what="the server to listen")
        return proc

    def log(self, proc) -> str:
        return (self.tmp_path / f"serve-{proc.n}.log").read_text()

    def kill(self, proc) -> None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=20)

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=20)
            proc.log.close()


@pytest.fixture
def servers(transactional_db, tmp_path, settings):
    require(connection.vendor == "postgresql", "Postgres via DATABASE_URL (the server shares the test database)")
    env = dict(
        os.environ,
        DJANGO_SETTINGS_MODULE="benchforge.settings",
        DATABASE_URL=_test_database_url(),
        BENCHFORGE_JOB_RUNNER="thread",
        BENCHFORGE_JOB_HEARTBEAT_SECONDS="0.5",
        BENCHFORGE_JOB_HEARTBEAT_TIMEOUT="3",
        BENCHFORGE_JOB_RECOVERY_BACKOFF="0.5",
        MEDIA_ROOT=str(settings.MEDIA_ROOT),
        PYTHONPATH=str(REPO_ROOT),
    )
    env.pop("CELERY_BROKER_URL", None)
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    settings.BENCHFORGE_JOB_HEARTBEAT_TIMEOUT = 3
    found = Servers(tmp_path, env)
    try:
        yield found
    finally:
        found.stop_all()
        for proc in found.procs:
            print(found.log(proc)[-3000:])


def test_a_killed_server_s_jobs_come_back_when_the_server_starts_again(servers):
    ledger = jobs.create_job(TOY, params={"units": 0, "ledger": 0})  # holds the units' side effects
    Job.objects.filter(pk=ledger.pk).update(status=Job.Status.SUCCEEDED)  # (not a job to run)
    # Queued by a web process that died before its thread took the job: nobody holds it.
    job = jobs.create_job(TOY, params={"units": 40, "delay": 0.1, "ledger": ledger.pk})
    first = servers.start()
    wait_for(lambda: Job.objects.get(pk=job.pk).done >= 10, timeout=60, what="ten units on the first server")
    servers.kill(first)  # `manage.py serve` SIGKILLed mid-run: the job stays "running", its thread gone
    killed_at = Job.objects.get(pk=job.pk)
    assert killed_at.status == Job.Status.RUNNING and 10 <= killed_at.done < 40

    servers.start()  # nobody presses Resume
    job = wait_for(lambda: Job.objects.filter(pk=job.pk, status__in=Job.FINISHED).first(), timeout=120, what="the job")
    assert job.status == Job.Status.SUCCEEDED and job.runs == 2 and job.recoveries == 1, job.message
    assert [run["recovered"] for run in job.run_log] == [False, True]
    pids = [int(re.search(r"pid (\d+)", run["worker"]).group(1)) for run in job.run_log]
    assert pids[0] == first.pid and pids[1] != first.pid  # each run in its server's own process
    keys = sorted(JobEntry.objects.filter(job=job).values_list("key", flat=True))
    assert keys == [f"unit {n:03d}" for n in range(40)]  # none lost
    effects = [key.split(" | ")[0] for key in JobEntry.objects.filter(job=ledger).values_list("key", flat=True)]
    assert sorted(effects) == keys  # none done twice
