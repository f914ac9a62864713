from celery import shared_task

from . import services


@shared_task
def run_alignmmbench_job_task(job_id: int) -> int:
    """Run or resume an AlignMMBench import; re-sending it resumes (nothing is imported twice)."""
    services.run_alignmmbench_job(job_id)
    return job_id
