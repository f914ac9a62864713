"""Starting, resuming and cancelling jobs. Apps create a job of a registered kind and `enqueue`
it; nothing else decides where a job runs (runner mode in settings.BENCHFORGE_JOB_RUNNER):
  celery  one generic Celery task ("jobs.run") on the broker, sent when the transaction commits;
  thread  a background thread of this process (the embedded runtime: requests never wait);
  inline  right here, when the transaction commits (tests, management commands).
"""

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django.db import OperationalError, close_old_connections, transaction
from django.utils import timezone, translation
from django.utils.translation import gettext, gettext_noop

from benchforge import permissions
from benchforge.errors import Conflict, DomainError

from . import registry, reports, runner
from .models import Job
from .staging import sweep_staged

log = logging.getLogger(__name__)
RUN_TASK = "jobs.run"
# A broker that does not answer is retried briefly, then the request gets its 503 (not a hang).
SEND_RETRY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.5, "interval_max": 1}


WAIT_LOOK_SECONDS = 0.25  # how often `wait` looks for jobs finished in other processes
RESEND_AFTER_SECONDS = 60  # younger unsent jobs may be on their way (their transaction's callbacks)


class QueueUnavailable(DomainError):
    status = 503
    code = "queue_unavailable"


_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_handed: set[int] = set()  # jobs this process's threads were handed (BENCHFORGE_JOB_RUNNER=thread)


# Job messages this module stores (jobs.reports: stored in English, shown in the reader's language).
NOT_SENT = gettext_noop(
    "Not sent: the job queue could not be reached (%(error)s). Nothing has run; the job is "
    "sent again when a worker starts, or resume it from its page once the queue is back."
)
RESUMED = gettext_noop("Resumed.")
RECOVERED = gettext_noop(
    "Re-queued automatically: its worker (%(worker)s) stopped without finishing it (recovery %(n)s of %(max)s)."
)
GAVE_UP = gettext_noop(
    "Failed: its worker (%(worker)s) stopped without finishing it, and it was re-queued automatically "
    "%(max)s time(s) already. Find out why workers die on it (memory, a time limit), then resume it."
)
RESUMED_BY = gettext_noop("Resumed by %(user)s.")
CANCELLED_BY = gettext_noop("Cancelled by %(user)s.")
reports.declare(NOT_SENT, RESUMED, RECOVERED, GAVE_UP, RESUMED_BY, CANCELLED_BY)


def create_job(kind: str, *, user=None, benchmark=None, total: int = 0, params: dict | None = None) -> Job:
    """A queued job of `kind`; `benchmark` (a benchmark or its id) is the one it works in."""
    registry.get(kind)  # a kind nobody registered could never run: refuse it now
    benchmark_id = getattr(benchmark, "pk", benchmark)
    return Job.objects.create(
        kind=kind,
        created_by=user,
        benchmark_id=benchmark_id,
        total=total,
        params=params or {},
        language=started_in(),
    )


def started_in() -> str:
    """The interface language the starter is reading (a page's, or a command's English)."""
    active = translation.get_language() or ""
    return active if active in dict(settings.LANGUAGES) else ""


def enqueue(job: Job) -> Job:
    """Have the job run (once the current transaction commits, so the worker sees the row)."""
    if settings.BENCHFORGE_JOB_RUNNER == "celery":
        # Marked until the broker has taken it: a job whose sending fails, or never comes (an
        # earlier job of the same transaction failed to send), shows as not sent, never as queued.
        Job.objects.filter(pk=job.pk).update(unsent_since=timezone.now())
    transaction.on_commit(lambda: _dispatch(job.pk))
    transaction.on_commit(_sweep_quietly)
    return job


def _sweep_quietly() -> None:
    """Abandoned staged uploads go whenever new work starts (also: `manage.py sweep_uploads`)."""
    try:
        sweep_staged()
    except Exception:  # never let housekeeping stop a job from starting
        log.exception("sweeping staged uploads failed")


def show_result(job: Job, result: dict) -> None:
    """Show `result` on the job's page before it runs (an estimate, say); its runner's result replaces it."""
    Job.objects.filter(pk=job.pk).update(result=result)
    job.result = result


def detach_benchmark(job: Job) -> None:
    """The job no longer belongs to its benchmark (which is about to go): it stays, to say what happened."""
    Job.objects.filter(pk=job.pk).update(benchmark_id=None)
    job.benchmark_id = None


def delete_jobs_of(benchmark_id: int) -> None:
    """A benchmark is deleted: its jobs (and their entries) go with it."""
    Job.objects.filter(benchmark_id=benchmark_id).delete()


def start_job(kind: str, **kwargs) -> Job:
    return enqueue(create_job(kind, **kwargs))


def run_now(job: Job | int) -> Job:
    """Run a queued job here and now (management commands, tests); returns it as it ended."""
    job_id = job.pk if isinstance(job, Job) else job
    runner.execute(job_id)
    return Job.objects.select_related("created_by").get(pk=job_id)


def see_through(job: Job | int, *, timeout: float = 300) -> Job:
    """Run a just-queued job to its end as a user's would run (the demo, management commands):
    inside a transaction (a test) the runner only gets it on commit, so it runs here."""
    from django.db import transaction

    if transaction.get_connection().in_atomic_block:
        return run_now(job)
    return wait([job], timeout=timeout)[0]


def wait(jobs, *, timeout: float) -> list[Job]:
    """Wait until every job of `jobs` (Jobs or ids) is finished, or `timeout` seconds have passed;
    returns them as they are then, in the order given (check is_finished: after a timeout some
    are not). A job run by this process (thread or inline runner) wakes the wait the moment it
    ends; one run by a worker elsewhere is seen at the next look at the database (a few times a
    second)."""
    ids = [job.pk if isinstance(job, Job) else int(job) for job in jobs]
    deadline = time.monotonic() + timeout
    found: dict[int, Job] = {}
    while True:
        seen = runner.finished_count()
        try:
            found = {job.pk: job for job in Job.objects.select_related("created_by").filter(pk__in=ids)}
            settled = all(job.is_finished for job in found.values())
        except OperationalError:  # SQLite's in-memory database refuses a read while a job thread writes
            settled = False
        left = deadline - time.monotonic()
        if settled or left <= 0:
            return [found[pk] for pk in ids if pk in found]
        runner.wait_for_finish(seen, timeout=min(left, WAIT_LOOK_SECONDS))


def _dispatch(job_id: int) -> None:
    mode = settings.BENCHFORGE_JOB_RUNNER
    if mode == "celery":
        _send(job_id)
        resend_unsent(older_than=RESEND_AFTER_SECONDS)  # the queue answers again: hand it what it missed
    elif mode == "thread":
        with _pool_lock:
            _handed.add(job_id)
        _thread_pool().submit(_run_in_thread, job_id)
    elif mode == "inline":
        runner.execute(job_id)
    else:
        raise DomainError(f"BENCHFORGE_JOB_RUNNER is {mode!r}; use celery, thread or inline.")


def _send(job_id: int) -> None:
    """Hand the job to the broker, or mark it unsent and raise QueueUnavailable (a 503)."""
    from benchforge.celery import app

    try:
        # A connection per job start (not the app's pool): always the broker the settings name now.
        with app.connection_for_write() as connection:
            app.send_task(
                RUN_TASK,
                args=[job_id],
                queue=settings.BENCHFORGE_JOB_QUEUE,
                connection=connection,
                retry=True,
                retry_policy=SEND_RETRY,
            )
    except Exception as exc:  # kombu's OperationalError, socket errors: the broker did not take it
        log.warning("job %s not sent: the job queue is unreachable (%s)", job_id, exc)
        message = reports.text(NOT_SENT, error=type(exc).__name__)
        Job.objects.filter(pk=job_id, status=Job.Status.QUEUED).update(unsent_since=timezone.now(), message=message)
        raise QueueUnavailable(
            f"Job #{job_id} was saved but the job queue (Celery broker) could not be reached, so nothing runs yet. "
            "Check that the broker (Redis) is up; the job is sent again when a worker starts, or resume it "
            "from its page.",
            extra={"job": job_id},
        ) from None
    Job.objects.filter(pk=job_id, unsent_since__isnull=False).update(unsent_since=None)
    Job.objects.filter(pk=job_id, status=Job.Status.QUEUED, message__startswith="Not sent:").update(message="")


def resend_unsent(*, older_than: float = 0) -> int:
    """Send the queued jobs the broker never received (oldest first), marked unsent at least
    `older_than` seconds ago; returns how many were sent. Called when a worker starts, after any
    job is sent, and by `manage.py resend_jobs`; stops at the first failure. (A job sent twice
    runs once: a finished or running job is not claimed again.)"""
    if settings.BENCHFORGE_JOB_RUNNER != "celery":
        return 0
    sent = 0
    cutoff = timezone.now() - timezone.timedelta(seconds=older_than)
    unsent = Job.objects.filter(status=Job.Status.QUEUED, unsent_since__isnull=False, unsent_since__lte=cutoff)
    for job_id in unsent.order_by("pk").values_list("pk", flat=True):
        try:
            _send(job_id)
        except QueueUnavailable:
            break
        sent += 1
    return sent


def adopt_queued() -> list[int]:
    """The thread runtime's queue is in the memory of the web process that queued the job: when
    that process was killed (a stopped `manage.py serve`), its queued jobs wait for nobody. Hand
    the queued jobs this process was never given to its threads (a job another live process is
    about to run is run once: claiming is guarded). A job younger than two heartbeats is left to
    the process that made it (a command running it here and now). Returns their ids; only with
    BENCHFORGE_JOB_RUNNER=thread (a broker keeps its own queue)."""
    if settings.BENCHFORGE_JOB_RUNNER != "thread":
        return []
    young = timezone.now() - timezone.timedelta(seconds=2 * settings.BENCHFORGE_JOB_HEARTBEAT_SECONDS)
    queued = Job.objects.filter(status=Job.Status.QUEUED, created_at__lt=young).order_by("pk").values_list("pk", flat=True)
    with _pool_lock:
        orphans = [job_id for job_id in queued if job_id not in _handed]
    for job_id in orphans:
        log.warning("job %s was queued by a web process that is gone: it runs here", job_id)
        _dispatch(job_id)
    return orphans


def _thread_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="benchforge-job")
        return _pool


def _run_in_thread(job_id: int) -> None:
    try:
        runner.execute(job_id)
    except Exception:  # execute records failures on the job; this is a last resort for the log
        log.exception("job %s crashed its thread", job_id)
    finally:
        close_old_connections()


def resume(job: Job, *, user) -> Job:
    """Queue a failed, cancelled or interrupted job again; its runner skips the units already done."""
    permissions.require_researcher(user, "Resuming or cancelling a job")
    return enqueue(requeue(job, note=reports.text(RESUMED_BY, user=user.get_username())))


def requeue(job: Job, *, note: str = RESUMED) -> Job:
    """Put a failed, cancelled or interrupted job back in the queue (the caller runs or enqueues it);
    a job the queue never received stays queued and is sent again."""
    job.refresh_from_db()
    if job.is_unsent:
        Job.objects.filter(pk=job.pk).update(message=note)
        job.refresh_from_db()
        return job
    if not job.can_resume:
        if job.status == Job.Status.RUNNING:
            raise Conflict(
                gettext(
                    "Job #%(id)s is still running (last heard from %(when)s); it can be resumed only once its worker has stopped."
                )
                % {"id": job.pk, "when": f"{timezone.localtime(job.heartbeat_at):%H:%M:%S}"},
                code="still_running",
            )
        raise Conflict(
            gettext("Job #%(id)s is %(status)s; only a failed, cancelled or interrupted job can be resumed.")
            % {"id": job.pk, "status": str(job.get_status_display()).lower()},
            code="not_resumable",
        )
    updated = Job.objects.filter(pk=job.pk, status=job.status, run_token=job.run_token).update(
        status=Job.Status.QUEUED, run_token="", finished_at=None, message=note, recoveries=0
    )
    if not updated:
        raise Conflict(gettext("Job #%(id)s changed meanwhile; reload the page.") % {"id": job.pk}, code="changed")
    job.refresh_from_db()
    return job


def cancel(job: Job, *, user) -> Job:
    """Stop a queued or running job: its worker stops at its next unit; what is done stays done."""
    permissions.require_researcher(user, "Resuming or cancelling a job")
    job.refresh_from_db()
    if not job.can_cancel:
        raise Conflict(
            gettext("Job #%(id)s is already %(status)s: nothing is left to cancel; reload the page.")
            % {"id": job.pk, "status": str(job.get_status_display()).lower()},
            code="not_cancellable",
        )
    Job.objects.filter(pk=job.pk, status__in=[Job.Status.QUEUED, Job.Status.RUNNING]).update(
        status=Job.Status.CANCELLED, finished_at=timezone.now(), message=reports.text(CANCELLED_BY, user=user.get_username())
    )
    job.refresh_from_db()
    return job  # its staged upload stays while it can be resumed; the sweep removes it later


def recovery_delay(recoveries: int) -> float:
    """Seconds past the heartbeat timeout before a lost job is re-queued the (recoveries+1)th time:
    the back-off doubles each time (a job that kills its worker does not loop at full speed)."""
    return settings.BENCHFORGE_JOB_RECOVERY_BACKOFF * (2**recoveries)


def recover_lost() -> dict[str, list[int]]:
    """The sweeper: running jobs whose worker was lost (no heartbeat for the timeout plus the
    back-off) are re-queued and sent again, at most BENCHFORGE_JOB_MAX_RECOVERIES times each;
    after that they fail with the reason (a person resumes them). Every worker runs it every few
    seconds (jobs.tasks), as does `manage.py resend_jobs`; a job is taken by one sweeper only
    (a guarded update). Returns {"recovered": ids, "failed": ids}."""
    done: dict[str, list[int]] = {"recovered": [], "failed": []}
    now = timezone.now()
    stale = now - timezone.timedelta(seconds=settings.BENCHFORGE_JOB_HEARTBEAT_TIMEOUT)
    lost = Job.objects.filter(status=Job.Status.RUNNING, heartbeat_at__lt=stale)
    limit = settings.BENCHFORGE_JOB_MAX_RECOVERIES
    for job in lost.order_by("pk").only("pk", "run_token", "heartbeat_at", "recoveries", "worker"):
        if job.heartbeat_at > stale - timezone.timedelta(seconds=recovery_delay(job.recoveries)):
            continue  # still backing off
        mine = Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING, run_token=job.run_token, heartbeat_at=job.heartbeat_at)
        if job.recoveries >= limit:
            message = reports.text(GAVE_UP, worker=job.worker or "?", max=limit)
            if mine.update(status=Job.Status.FAILED, finished_at=now, message=message):
                log.warning("job %s failed: its worker %s was lost %d time(s)", job.pk, job.worker, job.recoveries + 1)
                done["failed"].append(job.pk)
            continue
        message = reports.text(RECOVERED, worker=job.worker or "?", n=job.recoveries + 1, max=limit)
        if not mine.update(status=Job.Status.QUEUED, run_token="", message=message, recoveries=job.recoveries + 1):
            continue  # another sweeper (or its own worker, back) got there first
        log.warning("job %s re-queued: its worker %s was lost (recovery %d of %d)", job.pk, job.worker, job.recoveries + 1, limit)
        done["recovered"].append(job.pk)
        try:
            _dispatch(job.pk)
        except QueueUnavailable:
            pass  # marked unsent: sent again when the queue is back
    return done
