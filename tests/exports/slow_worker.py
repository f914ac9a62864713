"""The Celery app a test worker runs: benchforge's, with each stored release file taking
BENCHFORGE_TEST_SLOW_STORE seconds (a build long enough to kill its worker in the middle)."""

import os
import time

from celery.signals import worker_ready

from benchforge.celery import app  # noqa: F401 - `celery -A tests.exports.slow_worker` finds it here


@worker_ready.connect
def _slow_down(**_kwargs):
    from exports import services  # once Django's apps are loaded

    store_file = services._store_file

    def slow_store_file(release, kind, path):
        time.sleep(float(os.environ.get("BENCHFORGE_TEST_SLOW_STORE", "0")))
        return store_file(release, kind, path)

    services._store_file = slow_store_file
