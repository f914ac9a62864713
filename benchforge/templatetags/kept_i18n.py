"""`{% load i18n %}` as Django's, except that a `{% translate "literal" %}` keeps what it rendered,
per language: the project's template backend (benchforge/template_engine.py) loads this module
under the name `i18n`.

Django's tag resolves, translates, localizes and escapes its constant text on every render; the
editor alone has 76 of them, and every page's share of this was measurable (docs/web-costs.md). A
kept text is the very string Django's node rendered the first time in that language, so the output
cannot differ. Tags with a variable, a filter, a context or `as` are Django's own, unchanged."""

from django import template
from django.templatetags import i18n as django_i18n
from django.utils.translation import get_language

from benchforge.i18n import CATALOGS

register = template.Library()
register.tags.update(django_i18n.register.tags)
register.filters.update(django_i18n.register.filters)


class KeptTranslateNode(django_i18n.TranslateNode):
    def __init__(self, filter_expression, noop):
        super().__init__(filter_expression, noop)
        self.kept: dict[tuple, str] = {}

    def render(self, context):
        key = (get_language(), CATALOGS.value)
        found = self.kept.get(key)
        if found is None:
            found = self.kept[key] = super().render(context)
        return found


def _constant(node) -> bool:
    expression = node.filter_expression
    return (
        node.asvar is None
        and node.message_context is None
        and not expression.filters
        and getattr(expression.var, "literal", None) is not None
    )


@register.tag("translate")
@register.tag("trans")
def translate(parser, token):
    node = django_i18n.do_translate(parser, token)
    return KeptTranslateNode(node.filter_expression, node.noop) if _constant(node) else node
