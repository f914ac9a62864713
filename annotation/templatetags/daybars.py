"""{% people_progress_rows people %} and {% task_progress_rows tasks %}: the dashboard's pace tables'
rows, their per-day bars included, as one string each (14 bars a row, a row per annotator and per
task: as template loops, the dashboard's biggest cost; docs/web-costs.md). The markup is the loops'."""

from html import escape

from django import template
from django.utils.formats import localize
from django.utils.safestring import mark_safe

register = template.Library()


def _bars(bars) -> str:
    return "".join(f'<span title="{escape(bar["label"])}" data-height="{escape(str(bar["height"]))}"></span>' for bar in bars)


@register.simple_tag
def people_progress_rows(people) -> str:
    """The per-annotator table's rows (20 members: as a template loop, a fifth of the dashboard)."""
    return mark_safe(  # every value escaped or a number
        "\n  ".join(
            f'<tr data-user="{escape(row["username"])}"><td>{escape(row["username"])}</td>\n'
            f'      <td><div class="daybars">{_bars(row["bars"])}</div></td>\n'
            f'      <td class="num">{localize(row["total"])}</td><td class="num">{localize(row["per_active_day"])}</td>'
            f'<td class="num">{localize(row["open"])}</td><td class="num">{localize(row["done"])}</td></tr>'
            for row in people
        )
    )


@register.simple_tag
def task_progress_rows(tasks) -> str:
    return mark_safe(  # every value escaped or a number
        "\n  ".join(
            f'<tr data-task="{escape(row["task"].slug)}"><td>{escape(str(row["task"].label))}</td>\n'
            f'      <td><div class="daybars">{_bars(row["bars"])}</div></td>\n'
            f'      <td class="num">{localize(row["total"])}</td></tr>'
            for row in tasks
        )
    )
