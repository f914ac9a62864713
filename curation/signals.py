"""Jobs keep only their benchmark's id (jobs sits below curation): a deleted benchmark's jobs go here.
A benchmark's members changing is a change of its setup for what pages keep (benchforge.navigation):
its people selects, its members' counts and headers."""

from django.db.models.signals import m2m_changed, post_delete
from django.dispatch import receiver

from benchforge import navigation
from jobs import services as jobs

from .models import Benchmark


@receiver(post_delete, sender=Benchmark, dispatch_uid="curation.delete_benchmark_jobs")
def delete_benchmark_jobs(sender, instance, **kwargs):
    jobs.delete_jobs_of(instance.pk)


@receiver(m2m_changed, sender=Benchmark.members.through, dispatch_uid="curation.members_changed")
def members_changed(sender, instance, action, reverse, pk_set, **kwargs):
    if not action.startswith("post_"):
        return
    if not reverse:
        navigation.setup_changed(instance.pk)  # benchmark.members.add(...)
    elif pk_set:
        for benchmark_id in pk_set:  # user.benchmarks.add(...)
            navigation.setup_changed(benchmark_id)
    else:
        navigation.setup_changed()  # user.benchmarks.clear(): which ones is not told
