"""{% demo_notice batch %}, {% demo_notice run %}, {% demo_notice scores %}...: a notice on any page
that shows output of the built-in demo provider (llm.demo), naming its endpoints; nothing for
real endpoints. Takes endpoint names, or objects naming endpoints (a rewrite batch, a QC run, a
leaderboard score), or lists of either."""

from django import template

from ..demo import demo_names

register = template.Library()

ENDPOINT_FIELDS = ("endpoint", "model_names", "extractor", "judge")


def _names(value, depth: int = 0) -> list[str]:
    if value is None or value == "" or depth > 3:
        return []
    if isinstance(value, str):
        return [value]
    if any(hasattr(value, field) for field in ENDPOINT_FIELDS):
        return [n for field in ENDPOINT_FIELDS for n in _names(getattr(value, field, None), depth + 1)]
    if hasattr(value, "all") and callable(value.all):
        value = value.all()
    try:
        return [n for part in value for n in _names(part, depth + 1)]
    except TypeError:
        return []


@register.inclusion_tag("llm/_demo_notice.html")
def demo_notice(*values):
    return {"demo": demo_names([n for value in values for n in _names(value)])}
