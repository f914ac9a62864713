"""The sweeper: a thread that looks, every heartbeat interval, for running jobs whose worker was
lost and re-queues them (jobs.services.recover_lost). Every Celery worker runs one (jobs.tasks);
so does a web process that runs jobs in its own threads (BENCHFORGE_JOB_RUNNER=thread, `make run`):
a job of a killed `manage.py serve` comes back once the server is started again."""

import logging
import threading

from django.conf import settings
from django.db import close_old_connections

log = logging.getLogger(__name__)

_stop = threading.Event()
_lock = threading.Lock()
_thread: threading.Thread | None = None


def sweep_once() -> None:
    from . import services

    try:
        found = services.recover_lost()
        adopted = services.adopt_queued()
    except Exception:  # a busy database, a broker away: look again next time
        log.exception("looking for jobs whose worker was lost failed")
        return
    finally:
        close_old_connections()
    if found["recovered"] or found["failed"]:
        log.info("lost workers: re-queued job(s) %s, failed job(s) %s", found["recovered"], found["failed"])
    if adopted:
        log.info("queued job(s) %s of a web process that is gone run here", adopted)


def start(*, while_runner: str = "") -> None:
    """Start this process's sweeper (once: a second call while it runs does nothing); with
    `while_runner`, it ends once the job runner is another (a test's settings changed back)."""
    global _thread
    interval = max(0.5, settings.BENCHFORGE_JOB_HEARTBEAT_SECONDS)

    def loop():
        sweep_once()  # at once: a restarted server picks up what the killed one left
        while not _stop.wait(interval):
            if while_runner and settings.BENCHFORGE_JOB_RUNNER != while_runner:
                return
            sweep_once()

    with _lock:
        if _thread is not None and _thread.is_alive():
            return
        _stop.clear()
        _thread = threading.Thread(target=loop, name="benchforge-job-sweeper", daemon=True)
        _thread.start()


def start_for_threads(**_kwargs) -> None:
    """Start the sweeper where jobs run in this process's threads; elsewhere the workers sweep."""
    if settings.BENCHFORGE_JOB_RUNNER == "thread":
        start(while_runner="thread")


def stop() -> None:
    _stop.set()
