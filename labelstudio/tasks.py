from celery import shared_task

from . import services


@shared_task
def run_push_task(job_id: int) -> int:
    """Push items to Label Studio; re-sending it is safe (items already there are not sent again)."""
    services.run_push(job_id)
    return job_id


@shared_task
def run_pull_task(job_id: int) -> int:
    """Pull Label Studio annotations into items; re-sending it is safe (pulled annotations change nothing)."""
    services.run_pull(job_id)
    return job_id
