"""Work a request leaves for after its response is sent: the person who asked does not wait for it.

The WSGI server sends the response, then closes it, which sends Django's `request_finished`; the
work runs then, in the same worker (which serves nothing else meanwhile: use it for work that must
happen but that nobody should wait for, such as recounting a dashboard part at a million items).
Outside a request (a job, a command, a test calling a service) the work runs at once.
"""

import logging
import threading

from django.core.signals import request_finished, request_started

log = logging.getLogger(__name__)
_local = threading.local()


def in_request() -> bool:
    return getattr(_local, "pending", None) is not None


def after_response(work) -> None:
    """Run `work()` once this thread's response has been sent; outside a request, now."""
    pending = getattr(_local, "pending", None)
    if pending is None:
        work()
    else:
        pending.append(work)


def _started(**_ignored) -> None:
    _local.pending = []


def _finished(**_ignored) -> None:
    pending, _local.pending = getattr(_local, "pending", None), None
    for work in pending or ():
        try:
            work()
        except Exception:  # the response is gone: nobody else can be told
            log.exception("work left for after a response failed")


def connect() -> None:
    request_started.connect(_started, dispatch_uid="benchforge.after_response.started")
    request_finished.connect(_finished, dispatch_uid="benchforge.after_response.finished")
