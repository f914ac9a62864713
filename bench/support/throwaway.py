"""What the Celery benches share: a throwaway Postgres database, the environment the app and its
workers run with, real Celery workers (solo pool) on Redis, and waiting for jobs.

Connections: BENCH_POSTGRES_URL (admin, default postgres://postgres@127.0.0.1:5432/postgres),
BENCH_REDIS_URL (default redis://127.0.0.1:6379/15).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg2

REPO = Path(__file__).resolve().parents[2]
ADMIN_URL = os.environ.get("BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/15")
KEY_ENV = "BENCH_FAKE_LLM_KEY"


def database_url(name: str) -> str:
    return urlunsplit(urlsplit(ADMIN_URL)._replace(path=f"/{name}"))


def admin(sql: str) -> None:
    conn = psycopg2.connect(ADMIN_URL)
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
    finally:
        conn.close()


def create_database(prefix: str) -> str | None:
    """A new database named after `prefix` and this process, once Redis answers too; None (and
    the reason printed) when either service is missing, so the bench can skip."""
    import redis

    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
    except redis.RedisError as exc:
        print(f"SKIPPED: this benchmark needs Redis (BENCH_REDIS_URL={REDIS_URL}): {exc}")
        return None
    name = f"{prefix}_{os.getpid()}"
    try:
        admin(f'CREATE DATABASE "{name}"')
    except psycopg2.OperationalError as exc:
        print(f"SKIPPED: this benchmark needs Postgres (BENCH_POSTGRES_URL={ADMIN_URL}): {str(exc).strip()}")
        return None
    return name


def drop_database(name: str) -> None:
    from django.db import connections

    connections.close_all()
    admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def app_env(database: str, queue: str, models: Path, tmp: Path, **settings: str) -> dict:
    """The environment of this process and its workers: the throwaway database, Celery on Redis
    with a queue of the bench's own, the models file; `settings` add or override variables."""
    env = dict(
        os.environ,
        DATABASE_URL=database_url(database),
        DJANGO_SETTINGS_MODULE="benchforge.settings",
        DEBUG="false",
        SECRET_KEY=uuid.uuid4().hex * 2,
        CELERY_BROKER_URL=REDIS_URL,
        BENCHFORGE_JOB_QUEUE=queue,
        BENCHFORGE_MODELS=str(models),
        BENCHFORGE_LLM_REDIS_PREFIX=f"bench:{queue}",
        BENCHFORGE_JOB_HEARTBEAT_SECONDS="0.5",
        LOG_LEVEL="WARNING",
        MEDIA_ROOT=str(tmp / "media"),
        PYTHONPATH=str(REPO),
        **{KEY_ENV: "id.secret"},  # the shape zai-sdk expects of a key; OpenAI takes any
    )
    env.update(settings)
    return env


class Workers:
    """Celery workers (solo pool) on the bench's queue, each in its own process group; `profile`:
    a path to cProfile each worker's main (job) thread into (the worker's number is appended)."""

    def __init__(self, env: dict, queue: str, logdir: Path, profile: str | None = None):
        self.env, self.queue, self.logdir, self.profile = env, queue, logdir, profile
        self.procs: list[subprocess.Popen] = []

    def start(self) -> subprocess.Popen:
        n = len(self.procs)
        log = (self.logdir / f"worker-{n}.log").open("w")
        profiled = [sys.executable, "-m", "cProfile", "-o", f"{self.profile}.{n}"] if self.profile else []
        proc = subprocess.Popen(
            [
                *profiled,
                str(Path(sys.executable).with_name("celery")),
                "-A",
                "benchforge",
                "worker",
                "--pool=solo",
                "-Q",
                self.queue,
                "-n",
                f"bench{n}-{self.queue}@%h",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "--loglevel=WARNING",
            ],
            cwd=REPO,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        proc.log = log
        self.procs.append(proc)
        return proc

    def kill(self, proc: subprocess.Popen) -> None:
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

    def tail(self) -> str:
        for proc in self.procs:
            proc.log.flush()
        return "\n".join((self.logdir / f"worker-{n}.log").read_text()[-2000:] for n in range(len(self.procs)))


def wait_finished(jobs, timeout: float) -> float:
    """Seconds until every job finished (polling every 10 ms); raises on timeout."""
    from jobs.models import Job

    start = time.monotonic()
    ids = [job.pk for job in jobs]
    while Job.objects.filter(pk__in=ids, status__in=Job.FINISHED).count() < len(ids):
        if time.monotonic() - start > timeout:
            raise SystemExit(f"jobs {ids} did not finish within {timeout:.0f} s")
        time.sleep(0.01)
    return time.monotonic() - start
