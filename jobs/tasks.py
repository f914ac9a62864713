from celery import shared_task

from . import runner


@shared_task(name="jobs.run", acks_late=True, reject_on_worker_lost=True)
def run_job(job_id: int) -> None:
    """The one Celery task: run (or resume) a job. Re-delivery is safe: a job that is finished,
    cancelled or running elsewhere is not claimed again."""
    runner.execute(job_id)
