"""Job reports in the reader's language.

A job runs in its starter's language (the one their account chose, English otherwise: jobs.runner),
so what it writes with gettext reads in that language. A runner that writes from a template
declared here (`text(template, **values)`) stores the English text, whoever started the job, and
gets it translated for each reader where it is shown (`shown`): the stored text is matched against
the declared templates and the values found are put into the translation. Text from no declared
template (an exception's words, a remote server's answer) is shown as stored.
"""

import re
from functools import lru_cache

from django.utils.translation import gettext, gettext_noop, pgettext_lazy

_TEMPLATES: dict[str, re.Pattern] = {}
_PLACEHOLDER = re.compile(r"%\((\w+)\)[sd]")


def declare(*templates: str) -> None:
    """Templates (marked with gettext_noop, so makemessages finds them) a runner writes from."""
    for template in templates:
        _TEMPLATES[template] = _pattern(template)
    _match.cache_clear()


def text(template: str, **values) -> str:
    """The stored (English) text of a declared template."""
    assert template in _TEMPLATES, f"undeclared job report template: {template!r}"
    return template % values


def _pattern(template: str) -> re.Pattern:
    pieces, seen, last = [], set(), 0
    for placeholder in _PLACEHOLDER.finditer(template):
        name = placeholder[1]
        pieces.append(re.escape(template[last : placeholder.start()]))
        pieces.append(f"(?P={name})" if name in seen else f"(?P<{name}>.+?)")
        seen.add(name)
        last = placeholder.end()
    pieces.append(re.escape(template[last:]))
    return re.compile("".join(pieces), re.DOTALL)


@lru_cache(maxsize=4096)
def _match(stored: str) -> tuple[str, dict] | None:
    # The longest template first: a short one ("%(n)s items") must not swallow a longer match.
    for template, pattern in sorted(_TEMPLATES.items(), key=lambda pair: -len(pair[0])):
        found = pattern.fullmatch(stored)
        if found:
            return template, found.groupdict()
    return None


def shown(stored: str) -> str:
    """A stored report text in the active language (as stored when no declared template made it)."""
    if not stored:
        return stored
    found = _match(stored)
    if found is None:
        return stored
    template, values = found
    return _PLACEHOLDER.sub(lambda p: f"%({p[1]})s", gettext(template)) % values


# What a job's result keys read as on its page; other keys are shown as their words.
_RESULT_LABELS: dict[str, str] = {}


def declare_result_labels(labels: dict) -> None:
    """Labels (lazy translations) of result keys, e.g. {"skipped": pgettext_lazy("job result", "Skipped")}."""
    _RESULT_LABELS.update(labels)


def result_label(key) -> str:
    label = _RESULT_LABELS.get(str(key))
    return str(label) if label is not None else str(key).replace("_", " ").capitalize()


def result_word(key) -> str:
    """A nested result key, lower case ("kept" in "rewrite: kept 5")."""
    label = _RESULT_LABELS.get(str(key))
    return str(label).lower() if label is not None else str(key).replace("_", " ")


# Unit keys many runners use.
declare(gettext_noop("item %(id)s"), gettext_noop("image %(id)s"), gettext_noop("line %(n)s"))
declare_result_labels(
    {
        "items": pgettext_lazy("job result", "Items"),
        "skipped": pgettext_lazy("job result", "Skipped"),
        "errors": pgettext_lazy("job result", "Errors"),
        "added": pgettext_lazy("job result", "Added"),
        "created": pgettext_lazy("job result", "Created"),
        "updated": pgettext_lazy("job result", "Updated"),
        "duplicates": pgettext_lazy("job result", "Duplicates"),
        "ok": pgettext_lazy("job result", "OK"),
    }
)
