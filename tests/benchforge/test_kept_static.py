"""{% load static %} loads benchforge.templatetags.kept_static: a literal path keeps its address
(the same string Django's tag renders), a variable path or `as` is Django's own node."""

from django.template import Context, Engine, engines
from django.test import override_settings

from benchforge.templatetags.kept_static import KeptStaticNode

SOURCE = '{% load static %}{% static "app.css" %}|{% static name %}|{% static "a b&c.js" as js %}{{ js }}|{% static "x.png" %}'


def test_literal_paths_are_kept_and_render_as_djangos_tag():
    template = engines["django"].from_string(SOURCE)
    kept = [node for node in template.template.nodelist if isinstance(node, KeptStaticNode)]
    assert len(kept) == 2  # "app.css" and "x.png"; the variable and `as` tags are Django's
    first = template.render({"name": "other.js"})
    assert template.render({"name": "other.js"}) == first
    assert template.render({"name": "third.js"}).split("|")[1].endswith("third.js")  # a variable: resolved each time
    django_own = Engine(libraries={"static": "django.templatetags.static"}, builtins=[]).from_string(SOURCE)
    assert not any(isinstance(node, KeptStaticNode) for node in django_own.nodelist)
    assert django_own.render(Context({"name": "other.js"})) == first


def test_a_change_of_static_settings_drops_the_kept_addresses():
    template = engines["django"].from_string('{% load static %}{% static "app.css" %}')
    before = template.render({})
    with override_settings(STATIC_URL="/elsewhere/"):
        assert template.render({}) == "/elsewhere/app.css"
    assert template.render({}) == before
