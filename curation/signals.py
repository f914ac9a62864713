"""Jobs keep only their benchmark's id (jobs sits below curation): a deleted benchmark's jobs go here."""

from django.db.models.signals import post_delete
from django.dispatch import receiver

from jobs import services as jobs

from .models import Benchmark


@receiver(post_delete, sender=Benchmark, dispatch_uid="curation.delete_benchmark_jobs")
def delete_benchmark_jobs(sender, instance, **kwargs):
    jobs.delete_jobs_of(instance.pk)
