"""{% stage_rows rows %}: the body rows of the dashboard's table of items per task and stage, one
string per row. A benchmark has dozens of tasks and a dozen stages: as a template loop the table
cost the dashboard more CPU than anything else on it (docs/web-costs.md). The markup is the loop's."""

from django import template
from django.utils.html import escape
from django.utils.safestring import mark_safe

register = template.Library()


@register.simple_tag
def stage_rows(rows) -> str:
    out = []
    for row in rows:
        task = row["task"]
        quota = int(task.quota)
        cells = "".join(f'<td class="num">{n}</td>' for n in row["statuses"])
        out.append(
            f'<tr data-task="{escape(task.slug)}">\n'
            f"      <td>{escape(task.category.display_path)}</td><td>{escape(task.display_name)}</td><td>{quota}</td>\n"
            f"      {cells}\n"
            f'      <td class="num">{row["total"]}</td>\n'
            f'      <td><div class="bar" title="{row["total"]} of {quota}">'
            f'<span data-width="{row["percent"]}%"></span></div></td>\n    </tr>'
        )
    return mark_safe("\n  ".join(out))  # noqa: S308 - every value from data is escaped above
