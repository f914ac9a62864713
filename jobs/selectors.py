from django.shortcuts import get_object_or_404

from benchforge.roles import RESEARCHER, user_role

from .models import Job


def visible_jobs(user):
    qs = Job.objects.select_related("benchmark", "created_by")
    if user_role(user) == RESEARCHER:
        return qs
    return qs.filter(created_by=user) | qs.filter(benchmark__members=user)


def get_job_for(user, job_id: int) -> Job:
    return get_object_or_404(visible_jobs(user).distinct(), pk=job_id)
