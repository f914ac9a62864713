"""`{% load static %}` as Django's, except that `{% static "literal/path" %}` keeps the address it
rendered: the project's template backend (benchforge/template_engine.py) loads this module under
the name `static`.

Every page names about ten static files, and Django's tag asks the storage for each one's address
on every render (with the manifest storage, a lookup and a join each). The address of a literal path
changes only with the settings (or a new manifest, which needs a restart), so it is kept per
process; a path from a variable, or `as`, is Django's own node, unchanged."""

from django import template
from django.templatetags import static as django_static

from benchforge.kept import SettingsGeneration

register = template.Library()
register.tags.update(django_static.register.tags)
register.filters.update(django_static.register.filters)

_settings = SettingsGeneration("STATIC_URL", "STORAGES", "STATICFILES_STORAGE", "INSTALLED_APPS", "FORCE_SCRIPT_NAME")


class KeptStaticNode(django_static.StaticNode):
    def __init__(self, varname=None, path=None):
        super().__init__(varname, path)
        self.kept: dict[tuple, str] = {}

    def render(self, context):
        key = (context.autoescape, _settings.value)
        found = self.kept.get(key)
        if found is None:
            found = self.kept[key] = super().render(context)
        return found


@register.tag("static")
def do_static(parser, token):
    node = django_static.StaticNode.handle_token(parser, token)
    # A quoted path compiles to its string; a variable to a Variable.
    literal = node.varname is None and not node.path.filters and isinstance(node.path.var, str)
    return KeptStaticNode(node.varname, node.path) if literal else node
