"""Deciding under simultaneous requests: the tools of the one rule every state change follows
(docs/architecture.md, "State changes").

A service that moves a row through a state decides under a lock on that row and on the parent whose
invariant the decision protects, and reads what it decides from *after* taking the locks; or it
writes with one conditional UPDATE whose WHERE holds the rule. Locks are taken in one order
everywhere (parents first; see the architecture doc), so two requests never wait on each other in
a circle. On SQLite (the embedded runtime) these locks are no-ops: every transaction there takes the
database's write lock when it begins, which serialises writers anyway.
"""

from django.db import IntegrityError, transaction


def lock(model, pk):
    """The row as it is now, locked until the transaction ends. One table, no joins on purpose:
    Postgres re-reads the locked row after waiting for a lock, but a joined row keeps the value it had
    before the wait, so anything else the decision reads is read by a query of its own after this."""
    return model.objects.select_for_update().get(pk=pk)


def lock_rows(queryset) -> list:
    """The rows of `queryset`, locked in primary-key order (the same order in every transaction)."""
    return list(queryset.select_for_update().order_by("pk"))


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
