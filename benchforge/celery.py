"""Celery app. Any host with the code, DATABASE_URL and CELERY_BROKER_URL can run
`celery -A benchforge worker`; without a broker URL tasks run eagerly in-process."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchforge.settings")

app = Celery("benchforge")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
