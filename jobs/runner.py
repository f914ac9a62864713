"""Running one job: claim it, run its kind's runner with a JobRun, keep a heartbeat, finish it.

Guarded state: only a queued job, or a running one whose worker stopped beating (it died), can be
claimed, so a re-delivered message for a finished or already running job does nothing. Each claim
gets a new run token; a worker whose token was replaced (the job was resumed elsewhere) or whose
job was cancelled stops at its next recorded unit. Every unit's entry is written in its own
transaction, so what a killed worker had recorded stays recorded and is skipped on resume.
"""

import logging
import os
import socket
import threading
import time
import uuid
from collections import Counter
from contextlib import contextmanager

from django.conf import settings
from django.db import DatabaseError, close_old_connections, transaction
from django.db.models import Count, F, Q
from django.utils import timezone, translation

from benchforge import navigation
from benchforge.bulk import insert_rows
from benchforge.errors import DomainError
from benchforge.i18n import account_language

from . import registry
from .models import Job, JobEntry
from .staging import discard_staged

log = logging.getLogger(__name__)
OK, SKIPPED, ERROR = JobEntry.Outcome.OK, JobEntry.Outcome.SKIPPED, JobEntry.Outcome.ERROR


class JobStopped(Exception):
    """The job was cancelled, or another run took it over: this run stops where it is."""


class JobFailed(DomainError):
    """The job failed, and has a result to show all the same (the usage and cost of the calls that
    were made): raised by JobRun.fail, finished as failed with that result."""

    def __init__(self, message: str, *, result: dict):
        super().__init__(message)
        self.result = result


class JobRun:
    """What a runner gets: the job, and the one way to report progress and per-unit outcomes."""

    def __init__(self, job: Job, token: str):
        self.job = job
        self.token = token
        self._last_beat = time.monotonic()
        self._stopped = threading.Event()

    @property
    def params(self) -> dict:
        return self.job.params

    @property
    def benchmark(self):
        """The job's benchmark (None when it has none), looked up once per run."""
        if not hasattr(self, "_benchmark"):
            self._benchmark = registry.benchmark(self.job.benchmark_id)
        return self._benchmark

    @property
    def user(self):
        return self.job.created_by

    # -- progress

    def set_total(self, total: int) -> None:
        Job.objects.filter(pk=self.job.pk).update(total=total)
        self.job.total = total
        self.checkpoint(force=True)

    def say(self, message: str) -> None:
        """A progress message shown with the bar (e.g. what the job is doing now)."""
        Job.objects.filter(pk=self.job.pk, run_token=self.token).update(message=message[:2000])

    def done_keys(self) -> set[str]:
        """Units finished in earlier runs (ok or skipped); units that failed are tried again."""
        return set(JobEntry.objects.filter(job_id=self.job.pk).exclude(outcome=ERROR).values_list("key", flat=True))

    def outcome_counts(self) -> Counter:
        """Units by outcome over every run of the job (an error retried successfully counts once, as ok)."""
        rows = JobEntry.objects.filter(job_id=self.job.pk).values_list("outcome").order_by().annotate(n=Count("id"))
        return Counter(dict(rows))

    def fail(self, message: str, *, result: dict):
        """End the job as failed, keeping `result` (a failed job otherwise keeps the result it had)."""
        raise JobFailed(message, result=result)

    def done_rows(self, prefix: str = "") -> dict[str, dict]:
        """{key without the prefix: data} of the units under `prefix` recorded ok in earlier runs
        (a resumed job's answered calls, say)."""
        return {key[len(prefix) :]: data for key, data in self.recorded(prefix=prefix, outcomes=(OK,)).items()}

    def recorded(self, *, keys=None, prefix: str = "", outcomes=None) -> dict[str, dict]:
        """{key: data} of the units recorded over every run, in the order recorded: only `keys`
        when given, only those under `prefix`, only those with `outcomes` when given."""
        entries = JobEntry.objects.filter(job_id=self.job.pk)
        if keys is not None:
            entries = entries.filter(key__in=list(keys))
        if prefix:
            entries = entries.filter(key__startswith=prefix)
        if outcomes is not None:
            entries = entries.filter(outcome__in=list(outcomes))
        return dict(entries.order_by("id").values_list("key", "data"))

    def tally(self, classify) -> Counter:
        """An outcome summary over every run: each recorded unit counted under the name(s) that
        `classify(outcome, data)` gives it (a name, a list of names, or None for none)."""
        tally: Counter = Counter()
        for outcome, data in JobEntry.objects.filter(job_id=self.job.pk).values_list("outcome", "data").iterator(2000):
            names = classify(outcome, data or {})
            tally.update([names] if isinstance(names, str) else names or ())
        return tally

    # -- units

    def record(self, key: str, outcome: str, message: str = "", data: dict | None = None) -> None:
        """Record (or, for a retried unit, overwrite) one unit's outcome; it counts as done once."""
        self.record_many([(key, outcome, message, data)])

    def record_many(self, rows) -> None:
        """Record several units in one transaction: [(key, outcome, message, data)]."""
        rows = [(key[:512], outcome, message, data or {}) for key, outcome, message, data in rows]
        if not rows:
            return
        self.checkpoint()
        with transaction.atomic():
            existing = set(
                JobEntry.objects.filter(job_id=self.job.pk, key__in=[r[0] for r in rows]).values_list("key", flat=True)
            )
            fresh = [(self.job.pk, k, o, m, d) for k, o, m, d in rows if k not in existing]
            insert_rows(JobEntry, ("job_id", "key", "outcome", "message", "data"), fresh)
            for key, outcome, message, data in rows:
                if key in existing:
                    JobEntry.objects.filter(job_id=self.job.pk, key=key).update(outcome=outcome, message=message, data=data)
            if fresh:
                Job.objects.filter(pk=self.job.pk).update(done=F("done") + len(fresh))

    @contextmanager
    def unit(self, key: str):
        """`with run.unit(key) as unit: ...; unit.ok(message, data)`: the unit's database writes
        and its entry commit together (a crash leaves neither), and a DomainError raised inside
        is recorded as the unit's error instead of failing the job."""
        self.checkpoint()
        outcome = _UnitOutcome()
        try:
            with transaction.atomic():
                yield outcome
                if outcome.value is None:
                    raise RuntimeError(f"unit {key!r} ended without ok(), skipped() or error()")
                self.record(key, *outcome.value)
        except DomainError as exc:
            self.record(key, ERROR, exc.message)

    # -- liveness

    def checkpoint(self, *, force: bool = False) -> None:
        """Beat (at most every heartbeat interval) and stop if the job was cancelled or taken over."""
        if self._stopped.is_set():
            raise JobStopped()
        if not force and time.monotonic() - self._last_beat < settings.BENCHFORGE_JOB_HEARTBEAT_SECONDS:
            return
        self._last_beat = time.monotonic()
        if not beat(self.job.pk, self.token):
            self._stopped.set()
            raise JobStopped()


class _UnitOutcome:
    value = None

    def ok(self, message: str = "", data: dict | None = None):
        self.value = (OK, message, data)

    def skipped(self, message: str = "", data: dict | None = None):
        self.value = (SKIPPED, message, data)

    def error(self, message: str, data: dict | None = None):
        self.value = (ERROR, message, data)


def beat(job_id: int, token: str) -> bool:
    """Write the heartbeat; False when this run no longer owns a running job."""
    return bool(Job.objects.filter(pk=job_id, run_token=token, status=Job.Status.RUNNING).update(heartbeat_at=timezone.now()))


@contextmanager
def _heartbeat_thread(run: JobRun):
    """Beats from a thread while the runner works (a single unit may take minutes: an LLM call
    with retries). Inline runs (tests, the CLI) rely on their recorded units instead."""
    if settings.BENCHFORGE_JOB_RUNNER == "inline":
        yield
        return
    stop = threading.Event()

    def loop():
        try:
            while not stop.wait(settings.BENCHFORGE_JOB_HEARTBEAT_SECONDS):
                try:
                    alive = beat(run.job.pk, run.token)
                except DatabaseError as exc:  # a busy database: beat again next time
                    log.warning("job %s: heartbeat not written (%s)", run.job.pk, exc)
                    continue
                if not alive:
                    run._stopped.set()
                    return
        finally:
            close_old_connections()

    thread = threading.Thread(target=loop, name=f"job-{run.job.pk}-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)


def worker_name(node: str = "") -> str:
    """Who runs a job here: the Celery worker's node name (or the host) and this process's id."""
    return f"{node or socket.gethostname()} (pid {os.getpid()})"


def claim(job_id: int, *, worker: str = "") -> tuple[Job, str] | None:
    """Take the job for this run, or None when it is not ours to run (finished, cancelled, or
    running with a live heartbeat elsewhere). The run is logged on the job with the worker's name."""
    token = uuid.uuid4().hex
    now = timezone.now()
    stale = now - timezone.timedelta(seconds=settings.BENCHFORGE_JOB_HEARTBEAT_TIMEOUT)
    claimable = Q(status=Job.Status.QUEUED) | Q(status=Job.Status.RUNNING, heartbeat_at__lt=stale)
    worker = worker or worker_name()
    recovered = Job.objects.filter(pk=job_id).values_list("message", flat=True).first() or ""
    taken = Job.objects.filter(claimable, pk=job_id).update(
        status=Job.Status.RUNNING,
        run_token=token,
        heartbeat_at=now,
        started_at=now,
        finished_at=None,
        runs=F("runs") + 1,
        worker=worker[:200],
        message="",
    )
    if not taken:
        return None
    job = Job.objects.select_related("created_by").get(pk=job_id)
    entry = {
        "run": job.runs,
        "worker": job.worker,
        "started_at": now.isoformat(),
        "recovered": recovered.startswith(RECOVERY_PREFIX),
    }
    job.run_log = [*(job.run_log or []), entry][-100:]
    Job.objects.filter(pk=job_id, run_token=token).update(run_log=job.run_log)
    return job, token


# How the message of a job re-queued by jobs.services.recover_lost starts (so its next run is logged as recovered).
RECOVERY_PREFIX = "Re-queued automatically"


def execute(job_id: int, *, worker: str = "") -> Job | None:
    """Run (or resume) a job if it can be claimed; returns the job as it ended, or None when it
    was not claimable (a re-delivered message for a finished job, say: nothing changes)."""
    claimed = claim(job_id, worker=worker)
    if claimed is None:
        log.info("job %s not claimable (finished, cancelled or running elsewhere); nothing to do", job_id)
        return None
    job, token = claimed
    log.info("job %s (%s) run %s started on %s", job_id, job.kind, job.runs, job.worker)
    run = JobRun(job, token)
    try:
        kind = registry.get(job.kind)
    except LookupError as exc:
        return _finish(run, Job.Status.FAILED, message=str(exc))
    # A job writes in its starter's language (their account's choice, else the page's they started it
    # from, else English): the same on a worker as inline. Texts from jobs.reports' declared templates
    # are stored in English whoever starts the job and are translated for each reader where shown.
    chosen = (account_language(job.created_by) if job.created_by_id else "") or job.language
    with _heartbeat_thread(run), translation.override(chosen or "en"):
        try:
            result = kind.run(run)
        except JobStopped:
            log.info("job %s stopped: cancelled or taken over by another run", job_id)
            return Job.objects.get(pk=job_id)
        except JobFailed as exc:
            return _finish(run, Job.Status.FAILED, message=exc.message, result=exc.result)
        except DomainError as exc:
            return _finish(run, Job.Status.FAILED, message=exc.message)
        except Exception as exc:  # the job row is the report; the traceback goes to the log
            log.exception("job %s (%s) failed", job_id, job.kind)
            return _finish(run, Job.Status.FAILED, message=f"{type(exc).__name__}: {exc}")
    if result is None:
        counts = run.outcome_counts()
        result = {"ok": counts.get(OK, 0), "skipped": counts.get(SKIPPED, 0), "errors": counts.get(ERROR, 0)}
    return _finish(run, Job.Status.SUCCEEDED, result=result)


# Jobs finished by this process, counted, so a waiter (services.wait) wakes when one ends.
_finished = threading.Condition()
_finished_count = 0


def finished_count() -> int:
    with _finished:
        return _finished_count


def wait_for_finish(seen: int, *, timeout: float) -> None:
    """Return once a job of this process finished after `seen` (finished_count), or after `timeout`."""
    with _finished:
        _finished.wait_for(lambda: _finished_count != seen, timeout=timeout)


def _note_finished() -> None:
    global _finished_count
    with _finished:
        _finished_count += 1
        _finished.notify_all()


def _finish(run: JobRun, status: str, *, message: str = "", result: dict | None = None) -> Job:
    fields = {"status": status, "finished_at": timezone.now()}
    if message:
        fields["message"] = message[:4000]
    if result is not None:
        fields["result"] = result
    owned = Job.objects.filter(pk=run.job.pk, run_token=run.token, status=Job.Status.RUNNING).update(**fields)
    job = Job.objects.select_related("created_by").get(pk=run.job.pk)
    if owned and status == Job.Status.SUCCEEDED:
        discard_staged(job)
    log.info("job %s (%s) run %s ended: %s", job.pk, job.kind, run.job.runs, status if owned else f"{job.status} meanwhile")
    # What the job wrote (bulk writes send no signals) may change what waits there, or the setup (a preset's tasks).
    navigation.setup_changed(job.benchmark_id)
    _note_finished()
    return job
