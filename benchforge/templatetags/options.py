"""{% task_options groups selected %}, {% choice_options choices selected %} and
{% username_options people selected %}: a select's options as one string.

A filter bar's selects list every task and every member, some twice; as template loops they cost a
list page about as much CPU as its rows (docs/web-costs.md). Values and labels are escaped."""

from django import template
from django.utils.html import escape
from django.utils.safestring import mark_safe

register = template.Library()


def _option(value, label, selected) -> str:
    mark = " selected" if str(value) == str(selected) and selected not in (None, "") else ""
    return f'<option value="{escape(value)}"{mark}>{escape(label)}</option>'


@register.simple_tag
def task_options(groups, selected="") -> str:
    """The options of curation.selectors.task_choices, grouped by category (as _task_options.html)."""
    return mark_safe(  # noqa: S308 - escaped above
        "".join(
            f'<optgroup label="{escape(path)}">{"".join(_option(value, name, selected) for value, name in tasks)}</optgroup>'
            for path, tasks in groups
        )
    )


@register.simple_tag
def choice_options(choices, selected="") -> str:
    """(value, label) pairs."""
    return mark_safe("".join(_option(value, label, selected) for value, label in choices))  # noqa: S308 - escaped


@register.simple_tag
def username_options(people, selected="") -> str:
    """People (rows or users with a username), by username."""
    names = (p["username"] if isinstance(p, dict) else p.username for p in people)
    return mark_safe("".join(_option(name, name, selected) for name in names))  # noqa: S308 - escaped
