"""The Celery app a test worker runs: benchforge's, plus the toy job kind."""

from benchforge.celery import app  # noqa: F401 - `celery -A tests.jobs.toy_worker` finds it here
from tests.jobs import toy  # noqa: F401 - registers the toy kind
