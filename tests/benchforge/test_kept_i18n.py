"""{% load i18n %} loads benchforge.templatetags.kept_i18n: a constant {% translate %} keeps its
text per language (the same string Django's tag renders), everything else is Django's tag."""

from django.template import Context, Engine, engines
from django.test import override_settings
from django.utils import translation

from benchforge.templatetags.kept_i18n import KeptTranslateNode

SOURCE = (
    '{% load i18n %}{% translate "Save" %}|{% translate "50% off" %}|{% translate word %}|'
    '{% translate "Save" as saved %}{{ saved }}|{% translate "Save"|upper %}|{% translate "May" context "month name" %}'
)


def test_constant_texts_are_kept_per_language_and_render_as_djangos_tag():
    template = engines["django"].from_string(SOURCE)
    kept = [node for node in template.template.nodelist if isinstance(node, KeptTranslateNode)]
    assert len(kept) == 2  # "Save" and "50% off"; the variable, `as`, filter and context tags are Django's
    seen = []
    for language in ("en", "zh-hans", "en", "zh-hans"):
        with translation.override(language):
            seen.append(template.render({"word": "Cancel"}))
    assert seen[0] == seen[2] == "Save|50% off|Cancel|Save|SAVE|May"
    assert seen[1] == seen[3] and seen[1].startswith("保存|50% off|取消|保存|")
    with translation.override("zh-hans"):  # a variable is translated afresh each time
        assert template.render({"word": "Save"}).split("|")[2] == "保存"

    django_own = Engine(libraries={"i18n": "django.templatetags.i18n"}).from_string(SOURCE)  # Django's own tags
    assert not any(isinstance(node, KeptTranslateNode) for node in django_own.nodelist)
    for language, rendered in (("en", seen[0]), ("zh-hans", seen[1])):
        with translation.override(language):
            assert django_own.render(Context({"word": "Cancel"})) == rendered


def test_a_change_of_catalog_settings_drops_the_kept_texts():
    template = engines["django"].from_string('{% load i18n %}{% translate "items a day" %}')
    with translation.override("zh-hans"):
        assert template.render({}) == "道题目/天"
    with override_settings(LOCALE_PATHS=[]), translation.override("zh-hans"):  # no project catalog: not translated
        assert template.render({}) == "items a day"
    with translation.override("zh-hans"):
        assert template.render({}) == "道题目/天"


def test_the_template_check_leaves_out_only_the_deliberate_replacement():
    """templates.W003 (two modules under one library name) is not reported for the i18n and static
    replacements, and still is for any other clash."""
    from benchforge.template_engine import BenchforgeTemplates

    assert [w for w in engines["django"].check() if w.id == "templates.W003"] == []
    params = {
        "NAME": "clash",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {"libraries": {"options": "benchforge.templatetags.navigation"}},
    }
    warnings = [w.msg for w in BenchforgeTemplates(params).check() if w.id == "templates.W003"]
    assert len(warnings) == 1 and warnings[0].startswith("'options' is used for multiple template tag modules")
