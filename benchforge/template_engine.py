"""Django's template backend, with the project's replacements for some of Django's own tag
libraries (the names templates already `{% load %}`): `i18n` keeps constant translations per
language and `static` the addresses of literal paths (benchforge/templatetags/kept_i18n.py and
kept_static.py say why).

A replacement is deliberate, so the template check's warning about two modules under one name
(templates.W003) is left out for exactly that pair; any other clash is still reported."""

from django.template.backends.django import DjangoTemplates

REPLACED_LIBRARIES = {
    "i18n": ("django.templatetags.i18n", "benchforge.templatetags.kept_i18n"),
    "static": ("django.templatetags.static", "benchforge.templatetags.kept_static"),
}


class BenchforgeTemplates(DjangoTemplates):
    def get_templatetag_libraries(self, custom_libraries):
        libraries = super().get_templatetag_libraries(custom_libraries)
        libraries.update({name: ours for name, (_django, ours) in REPLACED_LIBRARIES.items()})
        return libraries

    def _check_for_template_tags_with_the_same_name(self):
        expected = {
            f"{name!r} is used for multiple template tag modules: {', '.join(repr(m) for m in sorted(pair))}"
            for name, pair in REPLACED_LIBRARIES.items()
        }
        return [warning for warning in super()._check_for_template_tags_with_the_same_name() if warning.msg not in expected]
