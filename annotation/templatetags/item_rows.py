"""{% item_rows page edit_url is_researcher task_labels %}: the items list's rows (values() rows of
annotation.views.ITEM_LIST_COLUMNS), one string per row.

The list shows 50 rows of ten cells; as a template loop that was about 750 variable lookups,
filters and localizations a page, most of the page's CPU (docs/web-costs.md). Here each row is
one format string; what repeats is resolved once per page: the translated texts, each status's and
kind's label (each task's label is kept: curation.selectors.task_labels). The markup is the loop's,
unchanged.
"""

import unicodedata
from html import escape

from django import template
from django.utils import timezone
from django.utils.safestring import mark_safe
from django.utils.text import Truncator
from django.utils.translation import gettext

from annotation.models import Item
from annotation.workflow import STATUS_LABELS

register = template.Library()

QUESTION_CHARS = 90  # as truncatechars:90


def _short(text: str) -> str:
    """truncatechars:90: ASCII text by slicing (the same result), other text through Django's Truncator."""
    if len(text) <= QUESTION_CHARS:
        return text
    if text.isascii():
        return text[: QUESTION_CHARS - 1] + "…"
    return Truncator(unicodedata.normalize("NFC", text)).chars(QUESTION_CHARS)


@register.simple_tag
def item_rows(page, edit_url: str, is_researcher: bool, task_labels: dict) -> str:
    select_item = gettext("select item %(id)s")
    rewrite_of = gettext("rewrite of #%(id)s")
    kinds = {value: escape(str(label)) for value, label in Item.Kind.choices}
    statuses = {value: escape(str(label)) for value, label in STATUS_LABELS.items()}
    tasks: dict[int, str] = {}
    edit_url = escape(edit_url)
    rows = []
    for item in page:
        pk, status, task_id, seed_id = item["id"], item["status"], item["task_id"], item["seed_id"]
        if task_id not in tasks:
            tasks[task_id] = escape(task_labels.get(task_id, ""))
        check = (
            f'<td><input type="checkbox" name="items" value="{pk}" aria-label="{escape(select_item % {"id": pk})}"></td>'
            if is_researcher
            else ""
        )
        seed = f' <span class="muted" title="{escape(rewrite_of % {"id": seed_id})}">↳{seed_id}</span>' if seed_id else ""
        author = escape(item["author__username"]) if item["author__username"] else "—"
        assignee = escape(item["assignee__username"]) if item["assignee__username"] else "—"
        question = escape(_short(item["question"])) if item["question"] else "—"
        updated = timezone.localtime(item["updated_at"]).strftime("%Y-%m-%d %H:%M") if item["updated_at"] else ""
        rows.append(
            f'<tr data-item="{pk}">\n      {check}\n      <td><a href="{edit_url}{pk}/">#{pk}</a>{seed}</td>\n'
            f'      <td class="user-content">{tasks[task_id]}</td><td>{kinds.get(item["kind"], escape(item["kind"]))}</td>'
            f'<td><span class="badge status-{escape(status)}">{statuses.get(status) or escape(status)}</span></td>\n'
            f'      <td class="user-content">{question}</td>\n'
            f'      <td class="user">{author}</td><td class="user">{assignee}</td>\n'
            f'      <td class="num">{item["version"]}</td><td>{updated}</td>\n    </tr>'
        )
    return mark_safe("\n  ".join(rows))  # every value above is escaped
