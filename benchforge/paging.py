"""Lists that may be huge (a million items): pages by keyset and a capped count.

A page number means OFFSET, and Postgres reads and throws away every row before the offset, so deep
pages cost more the deeper they are; a full COUNT(*) reads every row that matches, on every view.
Instead a page is "the rows after (or before) this row in the list's order" (`?after=` /
`?before=`, a cursor naming the boundary row's sort values), which costs the same at any depth and
neither skips nor repeats a row when rows are added between two page views; and the count stops at
BENCHFORGE_LIST_COUNT_CAP ("10,000+").
"""

import base64
import datetime
import json
from dataclasses import dataclass
from urllib.parse import urlencode

from django.conf import settings
from django.db.models import Q
from django.utils.formats import number_format
from django.utils.translation import gettext


def capped_count(queryset, cap: int | None = None) -> tuple[int, bool]:
    """How many rows (at most `cap`), and whether there are more: COUNT(*) over a LIMIT, so a huge
    list costs `cap` rows, not all of them."""
    cap = settings.BENCHFORGE_LIST_COUNT_CAP if cap is None else cap
    n = queryset.order_by().values("pk")[: cap + 1].count()  # values(): no joins nor columns the count needs not
    return min(n, cap), n > cap


def count_text(n: int, more: bool) -> str:
    """ "1,234", or "10,000+" when the count stopped at its cap."""
    return gettext("%(n)s+") % {"n": number_format(n, force_grouping=True)} if more else number_format(n, force_grouping=True)


def _value(row, path: str):
    """A sort value of a row: a model (following loaded relations) or a values() dict."""
    if isinstance(row, dict):
        return row[path]
    for part in path.split("__"):
        row = getattr(row, part)
    return row


def encode_cursor(values: list) -> str:
    plain = [v.isoformat() if isinstance(v, datetime.datetime | datetime.date) else v for v in values]
    return base64.urlsafe_b64encode(json.dumps(plain, separators=(",", ":")).encode()).decode().rstrip("=")


def _decode(cursor: str, fields: list) -> list | None:
    try:
        plain = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if not isinstance(plain, list) or len(plain) != len(fields):
            return None
        return [field.to_python(value) for field, value in zip(fields, plain)]
    except Exception:  # a cursor mangled by hand (bad base64, JSON or value): the first page
        return None


def _field(model, path: str):
    """The model field at the end of a lookup path (`round__number`)."""
    parts = path.split("__")
    for part in parts[:-1]:
        model = model._meta.get_field(part).related_model
    return model._meta.get_field(parts[-1])


def _beyond(ordering: tuple[str, ...], values: list, *, forward: bool) -> Q:
    """Rows after (forward) or before the row with these sort values, in the list's order:
    (a, b) > (va, vb) as a > va OR (a = va AND b > vb), each column in its own direction."""
    condition = None
    for n in range(len(ordering) - 1, -1, -1):
        name = ordering[n].lstrip("-")
        lookup = "lt" if ordering[n].startswith("-") == forward else "gt"
        step = Q(**{f"{name}__{lookup}": values[n]})
        condition = step if condition is None else step | (Q(**{name: values[n]}) & condition)
    return condition


@dataclass
class KeysetPage:
    object_list: list
    has_next: bool
    has_previous: bool
    next_query: str  # "?...&after=..." (the other parameters kept)
    previous_query: str
    first_query: str
    count: int
    count_more: bool
    count_text: str

    def __iter__(self):
        return iter(self.object_list)

    def __len__(self):
        return len(self.object_list)


def keyset_page(
    request, queryset, ordering: tuple[str, ...], per_page: int, *, count_queryset=None, keep_count=None
) -> KeysetPage:
    """One page of `queryset` in `ordering` (whose last column is unique, e.g. the id), after
    `?after=` or before `?before=` (cursors this page's links carry), with the capped count of
    `count_queryset` (default: the queryset; a leaner one counts without the rows' joins), or a
    function that makes it, called only when the count is not kept (building a queryset costs a
    page view more than reading a kept count).
    `keep_count(compute)` may keep the count between page views (navigation.kept_for_benchmark)."""
    fields = [_field(queryset.model, name.lstrip("-")) for name in ordering]
    params = request.GET.copy()
    after = _decode(params.pop("after", [""])[-1], fields) if "after" in params else None
    before = _decode(params.pop("before", [""])[-1], fields) if "before" in params else None
    params.pop("page", None)  # a page number from an older link: the first page
    reverse = tuple(name[1:] if name.startswith("-") else f"-{name}" for name in ordering)
    if before is not None:
        rows = list(queryset.filter(_beyond(ordering, before, forward=False)).order_by(*reverse)[: per_page + 1])
        has_previous, has_next = len(rows) > per_page, True
        rows = rows[:per_page][::-1]
        if not has_previous and len(rows) < per_page:  # back at the start (rows were added meanwhile): a full first page
            rows = list(queryset.order_by(*ordering)[: per_page + 1])
            has_next, rows = len(rows) > per_page, rows[:per_page]
    else:
        found = queryset.order_by(*ordering)
        if after is not None:
            found = found.filter(_beyond(ordering, after, forward=True))
        rows = list(found[: per_page + 1])
        has_next, has_previous, rows = len(rows) > per_page, after is not None, rows[:per_page]

    kept = [(key, value) for key, values in params.lists() for value in values]

    def query(**cursor) -> str:
        return "?" + urlencode(kept + list(cursor.items()))

    def count() -> tuple[int, bool]:
        counted = queryset if count_queryset is None else count_queryset
        return capped_count(counted() if callable(counted) else counted)

    n, more = keep_count(count) if keep_count else count()
    return KeysetPage(
        object_list=rows,
        has_next=has_next and bool(rows),
        has_previous=has_previous and bool(rows),
        next_query=query(after=encode_cursor([_value(rows[-1], name.lstrip("-")) for name in ordering])) if rows else "",
        previous_query=query(before=encode_cursor([_value(rows[0], name.lstrip("-")) for name in ordering])) if rows else "",
        first_query=query(),
        count=n,
        count_more=more,
        count_text=count_text(n, more),
    )
