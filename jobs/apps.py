from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "jobs"
    verbose_name = "Background jobs"

    def ready(self):
        from django.core.signals import request_started

        from . import sweeper, tasks  # noqa: F401 - tasks registers the "jobs.run" task with Celery

        # A web process that runs jobs in its threads (gunicorn without a broker) sweeps from its first request.
        request_started.connect(sweeper.start_for_threads, dispatch_uid="benchforge-job-sweeper")
