from celery import shared_task
from django.contrib.auth import get_user_model

from jobs import services as jobs

from . import services
from .models import Benchmark


@shared_task
def load_preset_task(preset: str, benchmark_id: int, user_id: int | None = None) -> int:
    """Load a preset into a benchmark as a tracked job; returns the job id."""
    benchmark = Benchmark.objects.get(pk=benchmark_id)
    user = get_user_model().objects.filter(pk=user_id).first()
    job = jobs.create_job("load_preset", user=user, benchmark=benchmark, total=1, params={"preset": preset})

    def work(job):
        services.load_preset(preset, benchmark=benchmark)
        jobs.record_entry(job.pk, preset, "ok", f"taxonomy has {benchmark.tasks.count()} tasks")
        return {"tasks": benchmark.tasks.count()}

    jobs.run_tracked(job.pk, work)
    return job.pk


@shared_task
def run_import_job_task(job_id: int) -> int:
    """Run or resume an image import (zip, server folder, URL list); re-sending it resumes."""
    services.run_import_job(job_id)
    return job_id
