"""A hot query's SQL, compiled by the ORM once per process and shape, then run with each request's
values.

Building a queryset and compiling it to SQL costs far more Python than running it (issue 43: on the
busiest pages about a fifth of each request went to `as_sql`). For a query every page runs, such as
"this benchmark, if the user may see it", the SQL is the same on every request but for a few
values. The queryset is still built by the code that owns the rule (permissions, selectors), once
per shape (say, per role), with stand-in values; the stand-ins are found among the compiled
parameters and each request's values take their places.
"""

from collections.abc import Callable
from threading import Lock

from django.db import connection
from django.db.models import QuerySet


class _Slot(str):
    """Where a request's value goes in the parameters (by name)."""


class Compiled:
    """`build(shape, **stand_ins)` -> a queryset of model rows. `rows(shape, **values)` runs its SQL,
    compiled the first time a shape is asked for, with `values` where the stand-ins were.
    Stand-ins must be values no real parameter takes (a string with a NUL, a negative id)."""

    def __init__(self, build: Callable[..., QuerySet], **stand_ins):
        self._build, self._stand_ins = build, stand_ins
        self._compiled: dict = {}
        self._lock = Lock()

    def _compile(self, shape):
        queryset = self._build(shape, **self._stand_ins)
        sql, params = queryset.query.sql_with_params()
        by_value = {value: name for name, value in self._stand_ins.items()}
        # A shape may leave a stand-in out (a researcher's benchmarks need no membership).
        slots = tuple(_Slot(by_value[p]) if isinstance(p, (str, int)) and p in by_value else p for p in params)
        return queryset.model, sql, slots

    def rows(self, shape, **values):
        key = (connection.vendor, shape)  # SQL is the database's own dialect
        found = self._compiled.get(key)
        if found is None:
            with self._lock:
                found = self._compiled[key] = self._compile(shape)
        model, sql, slots = found
        params = [values[slot] if type(slot) is _Slot else slot for slot in slots]
        return model._default_manager.raw(sql, params)


def as_prefetched(instance, relation: str, objects) -> None:
    """Leave `instance.<relation>.all()` answering `objects` without a query, as prefetch_related
    would have (for rows read with `Compiled`, which has no prefetching of its own)."""
    queryset = getattr(instance, relation).get_queryset()  # builds the filter only; runs nothing
    queryset._result_cache, queryset._prefetch_done = list(objects), True
    if not hasattr(instance, "_prefetched_objects_cache"):
        instance._prefetched_objects_cache = {}
    instance._prefetched_objects_cache[relation] = queryset


def as_loaded(instance, relation: str, related) -> None:
    """Leave `instance.<relation>` (a foreign key) answering `related` without a query."""
    type(instance)._meta.get_field(relation).set_cached_value(instance, related)
