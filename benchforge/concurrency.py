"""Deciding under simultaneous requests: the tools of the one rule every state change follows
(docs/architecture.md, "State changes").

A service that moves a row through a state decides under a lock on that row and on the parent whose
invariant the decision protects, and reads what it decides from *after* taking the locks; or it
writes with one conditional UPDATE whose WHERE holds the rule. On SQLite (the embedded runtime) these
locks are no-ops: every transaction there takes the database's write lock when it begins, which
serialises writers anyway.

Every row lock of the project is taken here (tests/benchforge/test_locks.py fails on any
`select_for_update` elsewhere), and each locks exactly one table: `FOR NO KEY UPDATE OF` the model's
own table, with no ordering or other join (a default `Meta.ordering` on a related field would join
its table, and `FOR UPDATE` would lock that parent row too, behind the caller's back: the deadlock
of issue 45). `NO KEY UPDATE` still makes two lockers of one row take turns, but does not stop
others from inserting rows that merely point at it (a foreign key check takes `KEY SHARE`).

The lock order (the one place it is written): a transaction that locks rows of several of these
tables locks them in this order, and rows of one table in id order, so two requests never wait on
each other in a circle.
"""

import logging
import random
import time
from functools import wraps

from django.db import DEFAULT_DB_ALIAS, IntegrityError, OperationalError, connections, transaction
from django.utils.translation import gettext

from .errors import Conflict

log = logging.getLogger(__name__)

LOCK_ORDER = (
    "curation.Benchmark",
    "curation.Task",
    "exports.Release",
    "analysis.Analysis",
    "rewrite.PromptTemplate",
    "review.ReviewRound",
    "review.RoundItem",
    "review.Review",
    "labelstudio.LabelStudioTask",  # a Label Studio decision, then the item it edits
    "annotation.Assignment",  # an item's assignments, before the item (annotation.services.lock_items)
    "annotation.Item",
    "qc.QCItem",
    "rewrite.Rewrite",
)


def _locking(queryset, *, for_delete: bool = False):
    # A row about to be deleted is locked FOR UPDATE: no one may add rows pointing at it meanwhile.
    return queryset.select_for_update(of=("self",), no_key=not for_delete)


def lock(model, pk):
    """The row as it is now, locked until the transaction ends. One table, no joins on purpose:
    Postgres re-reads the locked row after waiting for a lock, but a joined row keeps the value it had
    before the wait, so anything else the decision reads is read by a query of its own after this."""
    return _locking(model.objects.filter(pk=pk)).order_by().get()


def lock_or_none(model, pk, *, for_delete: bool = False):
    """lock(), or None when the row is not there (deleted meanwhile). `for_delete`: the caller may
    delete it, so rows pointing at it wait too."""
    found = list(_locking(model.objects.filter(pk=pk), for_delete=for_delete).order_by())
    return found[0] if found else None


def lock_rows(queryset) -> list:
    """The rows of `queryset`, locked in primary-key order (the same order in every transaction)."""
    return list(_locking(queryset).order_by("pk"))


# ---- deadlocks and serialization failures --------------------------------------------------------------

RETRYABLE_SQLSTATES = {"40P01", "40001"}  # deadlock detected, could not serialize access
RETRYABLE_ERRORS = {"DeadlockDetected", "SerializationFailure"}  # the driver's classes for those codes
ATTEMPTS = 4


def is_retryable(exc: BaseException) -> bool:
    """Whether the database aborted this transaction only because of another one (a deadlock or a
    serialization failure): the same work done again can succeed."""
    while exc is not None:
        code = getattr(exc, "pgcode", None) or getattr(exc, "sqlstate", None)
        if code in RETRYABLE_SQLSTATES or type(exc).__name__ in RETRYABLE_ERRORS:
            return True
        exc = exc.__cause__
    return False


def retry_conflict() -> Conflict:
    """What the user is told when a deadlock or serialization failure was not retried away: nothing
    was saved, and sending the same request again is safe."""
    return Conflict(
        gettext(
            "Another request changed the same records at the same moment, so nothing was saved. "
            "Send this again (reload the page first if it shows old data)."
        ),
        code="retry",
    )


def retried(func=None, *, attempts: int = ATTEMPTS, using: str = DEFAULT_DB_ALIAS):
    """Run a service in its own transaction, and run it again (at most `attempts` times in all, after
    a short random pause) when the database aborts it for a deadlock or a serialization failure. Only
    for services that are safe to repeat: everything they do is in that one transaction. Called inside
    an outer transaction it cannot retry (the outer one is aborted): the error goes up, and the
    request is answered 409 "send it again" (benchforge.middleware, benchforge.api)."""

    def decorate(service):
        @wraps(service)
        def run(*args, **kwargs):
            if connections[using].in_atomic_block:
                with transaction.atomic(using=using):
                    return service(*args, **kwargs)
            for attempt in range(1, attempts + 1):
                try:
                    with transaction.atomic(using=using):
                        return service(*args, **kwargs)
                except OperationalError as exc:
                    if attempt == attempts or not is_retryable(exc):
                        raise
                    log.warning("%s: %s; trying again (%d of %d)", service.__qualname__, exc, attempt + 1, attempts)
                    time.sleep(random.uniform(0.01, 0.05) * attempt)  # noqa: S311 - jitter, not a secret
            raise AssertionError("unreachable")

        return run

    return decorate(func) if func is not None else decorate


def create_unique(create, find_existing):
    """Create a row that a unique constraint guards: (row, True); or, when it exists already or a
    simultaneous request created it first, (the existing row, False). `create()` runs in a savepoint,
    so a unique violation leaves the caller's transaction usable; any other integrity error is raised."""
    existing = find_existing()
    if existing is not None:
        return existing, False
    try:
        with transaction.atomic():
            return create(), True
    except IntegrityError:
        existing = find_existing()
        if existing is None:
            raise
        return existing, False
