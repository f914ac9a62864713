"""{% rater_pair_rows pairs %}: the rows of a figures group's rater-pair table, one string per row.

A study of 50 raters shows a pair table per task and per model: over a thousand rows, each a
template loop's lookups, escapes and floatformat, were most of the study page's CPU. Here each row
is one format string; the numbers go through the same floatformat filter (once per distinct
value), so they read the same.
"""

from html import escape

from django import template
from django.template.defaultfilters import floatformat
from django.utils.safestring import mark_safe

register = template.Library()

ROW = '<tr><td class="user">{a} – {b}</td><td>{n}</td><td>{agreement}</td></tr>'


@register.simple_tag
def rater_pair_rows(pairs) -> str:
    rows, said = [], {}  # shares repeat (few distinct fractions): each is formatted once
    for pair in pairs:
        first, second = pair["raters"]
        agreement = pair.get("agreement")
        if agreement not in said:
            said[agreement] = floatformat(agreement, 3) if agreement is not None else ""
        shown = said[agreement]
        rows.append(ROW.format(a=escape(str(first)), b=escape(str(second)), n=escape(str(pair["n"])), agreement=shown or "—"))
    return mark_safe("".join(rows))  # noqa: S308 - every value above is escaped
