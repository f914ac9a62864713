"""{% queue_rows page open_url %}: the queue page's rows as one string (the view made each cell's
text, translated once per page). The page is opened after every item: as a template loop its rows,
with a form and token each, were a quarter of its CPU (docs/web-costs.md). The markup is the loop's."""

from html import escape

from django import template
from django.utils.safestring import mark_safe

register = template.Library()


@register.simple_tag(takes_context=True)
def queue_rows(context, page, open_url: str) -> str:
    token = str(context.get("csrf_token") or "")
    csrf = f'<input type="hidden" name="csrfmiddlewaretoken" value="{escape(token)}">' if token not in ("", "NOTPROVIDED") else ""
    open_url = escape(open_url)
    rows = []
    for a in page:
        pk = a["id"]
        rows.append(
            f'<tr data-assignment="{pk}">\n      <td>{escape(a["task_label"])}</td>\n      <td>{escape(a["work"])}</td>\n'
            f"      <td>{escape(a['assigned_on'])}</td>\n"
            f'      <td><form method="post" action="{open_url}{pk}/" class="inline">'
            f'{csrf}<button type="submit" class="link">{escape(a["action"])}</button></form></td>\n    </tr>'
        )
    return mark_safe("\n    ".join(rows))  # noqa: S308 - every value above is escaped
