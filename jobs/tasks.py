import logging

from celery import shared_task
from celery.signals import worker_ready, worker_shutdown

from . import runner, sweeper

log = logging.getLogger(__name__)


@shared_task(name="jobs.run", bind=True, acks_late=True, reject_on_worker_lost=True)
def run_job(self, job_id: int) -> None:
    """The one Celery task: run (or resume) a job. Re-delivery is safe: a job that is finished,
    cancelled or running elsewhere is not claimed again."""
    runner.execute(job_id, worker=runner.worker_name(self.request.hostname or ""))


@worker_ready.connect
def resend_unsent_jobs(**_kwargs) -> None:
    """A worker is up, so the broker is: send the jobs that were saved while it was unreachable."""
    from django.db import close_old_connections

    from . import services

    try:
        sent = services.resend_unsent()
    except Exception:  # never keep a worker from starting
        log.exception("re-sending unsent jobs failed")
        return
    finally:
        close_old_connections()
    if sent:
        log.info("re-sent %d job(s) the job queue had not received", sent)


@worker_ready.connect
def start_sweeper(**_kwargs) -> None:
    """Every worker looks for jobs whose worker died (no heartbeat) and re-queues them: a job
    recovers with no one pressing Resume (jobs.services.recover_lost)."""
    sweeper.start()


@worker_shutdown.connect
def stop_sweeper(**_kwargs) -> None:
    sweeper.stop()
