"""{% review_rows page review_url review_text %}: the review queue's rows (values() rows) as one string (the view
made each cell's text, translated once per page). The page is opened between every few reviews:
as a template loop its rows were a quarter of its CPU (docs/web-costs.md). The markup is the loop's."""

from html import escape

from django import template
from django.utils.safestring import mark_safe

register = template.Library()


@register.simple_tag
def review_rows(page, review_url: str, review_text: str) -> str:
    review_url, review_text = escape(review_url), escape(str(review_text))
    return mark_safe(  # noqa: S308 - every value below is escaped
        "\n    ".join(
            f'<tr data-review="{r["id"]}"><td>{escape(r["round_text"])}</td><td>#{r["item_id"]}</td>\n'
            f"      <td>{escape(r['task_text'])}</td><td>{escape(r['assigned_on'])}</td>\n"
            f'      <td><a href="{review_url}{r["id"]}/">{review_text}</a></td></tr>'
            for r in page
        )
    )
