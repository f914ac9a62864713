from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "jobs"
    verbose_name = "Background jobs"

    def ready(self):
        from . import tasks  # noqa: F401 - registers the "jobs.run" task with Celery
