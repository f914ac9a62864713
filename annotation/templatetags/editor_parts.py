"""The editor's repeated parts as strings: {% option_rows %}, {% criterion_rows %}, {% image_chips %},
{% exchange_rows %} (`blank=True`: the empty one of the page's <template> the script copies).

The editor is opened for every item; as includes, these parts cost it about a seventh of its CPU
(docs/web-costs.md). Same markup as the includes they replace; every value from data is escaped and
each text is translated once per language (benchforge.i18n.PerLanguage)."""

from django import template
from django.utils.safestring import mark_safe
from django.utils.translation import gettext

from benchforge.i18n import PerLanguage
from benchforge.templatetags.navigation import escape
from benchforge.templatetags.options import choice_options

register = template.Library()


def _option(letter: str, text: str, answer: str, texts: dict) -> str:
    checked = "checked" if letter and letter == answer else ""
    return (
        f'<div class="option">\n  <span class="letter">{escape(letter)}</span>\n'
        f'  <input type="text" name="choice" value="{escape(text)}" aria-label="{texts["option"]}">\n'
        f'  <label class="inline-choice"><input type="radio" name="answer" value="{escape(letter)}" {checked}> {texts["correct"]}</label>\n'
        f'  <button type="button" data-action="remove" title="{texts["remove"]}">✕</button>\n</div>\n'
    )


_OPTION_TEXTS = PerLanguage(
    lambda: {
        "option": escape(gettext("option text")),
        "correct": escape(gettext("correct")),
        "remove": escape(gettext("remove this option")),
    }
)


@register.simple_tag
def option_rows(options=(), answer="", blank=False) -> str:
    """(letter, text) pairs, the one whose letter is `answer` marked correct."""
    texts = _OPTION_TEXTS.get()
    rows = [("", "")] if blank else options
    return mark_safe("".join(_option(letter, text, answer or "", texts) for letter, text in rows))  # noqa: S308 - escaped


def _criterion(criterion, kind_options, texts: dict) -> str:
    options = choice_options(kind_options, criterion.kind if criterion is not None else "")
    text = escape(criterion.text) if criterion is not None else ""
    return (
        f'<div class="criterion">\n  <select name="criterion_kind" aria-label="{texts["kind"]}">{options}</select>\n'
        f'  <textarea name="criterion_text" rows="2" aria-label="{texts["text"]}">{text}</textarea>\n'
        f'  <button type="button" data-action="remove" title="{texts["remove"]}">✕</button>\n</div>\n'
    )


_CRITERION_TEXTS = PerLanguage(
    lambda: {
        "kind": escape(gettext("criterion type")),
        "text": escape(gettext("criterion text")),
        "remove": escape(gettext("remove this criterion")),
    }
)


@register.simple_tag
def criterion_rows(criteria, kind_options, blank=False) -> str:
    """The criteria's rows, each with its kind chosen among `kind_options` ((value, label) pairs)."""
    texts = _CRITERION_TEXTS.get()
    rows = [None] if blank else criteria
    return mark_safe("".join(_criterion(c, kind_options, texts) for c in rows))  # noqa: S308 - escaped


_CHIP_TEXTS = PerLanguage(
    lambda: (gettext("image #%(id)s"), escape(gettext("earlier")), escape(gettext("later")), escape(gettext("remove")))
)


@register.simple_tag
def image_chips(images) -> str:
    label, earlier, later, remove = _CHIP_TEXTS.get()
    out = []
    for image in images:
        url = escape(image.file.url)
        thumbnail = escape(image.thumbnail.url) if image.thumbnail else url
        out.append(
            f'<div class="image-chip" data-src="{url}">\n  <input type="hidden" name="image" value="{image.pk}">\n'
            f'  <img src="{thumbnail}" alt="{escape(label % {"id": image.pk})}">\n  <span>#{image.pk}</span>\n'
            f'  <span class="ops"><button type="button" data-action="up" title="{earlier}">←</button>'
            f'<button type="button" data-action="down" title="{later}">→</button>'
            f'<button type="button" data-action="remove" title="{remove}">✕</button></span>\n</div>\n'
        )
    return mark_safe("".join(out))  # noqa: S308 - escaped


_EXCHANGE_TEXTS = PerLanguage(
    lambda: tuple(
        escape(text)
        for text in (
            *(gettext("Exchange"), gettext("move up"), gettext("move down")),
            *(gettext("remove this exchange"), gettext("User"), gettext("Assistant")),
        )
    )
)


@register.simple_tag
def exchange_rows(exchanges=(), blank=False) -> str:
    """Pairs of turns (the user's, the assistant's reply) of a dialogue's history."""
    exchange, up, down, remove, user, assistant = _EXCHANGE_TEXTS.get()
    rows = [("", "")] if blank else [(pair[0]["content"], pair[1]["content"]) for pair in exchanges]
    return mark_safe(  # noqa: S308 - escaped
        "".join(
            f'<div class="exchange">\n  <div class="exchange-head"><span class="exchange-n">{exchange}</span>\n'
            f'    <span class="ops"><button type="button" data-action="up" title="{up}">↑</button>'
            f'<button type="button" data-action="down" title="{down}">↓</button>'
            f'<button type="button" data-action="remove" title="{remove}">✕</button></span></div>\n'
            f'  <label class="turn turn-user">{user}<textarea name="turn" rows="2">{escape(user_text)}</textarea></label>\n'
            f'  <label class="turn turn-assistant">{assistant}<textarea name="turn" rows="3">{escape(assistant_text)}</textarea></label>\n</div>\n'
            for user_text, assistant_text in rows
        )
    )
