"""Prompt templates: plain text files in benchforge_harness/prompts/, editable in any release.

Syntax: `{{name}}` inserts a value; `{{#name}}...{{/name}}` keeps the block only when the value
is non-empty. Values are inserted in one pass, so text inside a value is never re-read as a
placeholder. A folder given with --prompts overrides any template it contains.

Languages: the English templates sit at the top of the folder, each other language's in a
subfolder named by its code (zh/pointwise.txt, zh/rules/ocr.txt), in the built-in folder and in
an override folder alike. A template is looked up in the item's language (the release's unless
the item says otherwise) or in the one forced with --language; the machine-read parts of the
replies (JSON keys, verdict lines, score lines) are the same in every language, so one parser
reads them all.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from benchforge_harness.io import InputError

BUILTIN_DIR = Path(__file__).with_name("prompts")
LANGUAGES = {"en": "English", "zh": "Simplified Chinese"}
DEFAULT_LANGUAGE = "en"
_SECTION = re.compile(r"\{\{#(\w+)\}\}(.*?)\{\{/\1\}\}\n?", re.DOTALL)
_FIELD = re.compile(r"\{\{(\w+)\}\}")


@dataclass(frozen=True)
class Template:
    name: str
    text: str
    path: Path

    @cached_property
    def fields(self) -> set[str]:
        return set(_FIELD.findall(self.text)) | {m.group(1) for m in _SECTION.finditer(self.text)}

    @cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    def check(self, provided) -> None:
        """Refuse, before any call, a template that uses a value the command does not provide."""
        missing = self.fields - set(provided)
        if missing:
            raise InputError(
                f"{self.path}: uses {', '.join('{{' + m + '}}' for m in sorted(missing))}, which this command does not fill"
            )

    def render(self, **values) -> str:
        self.check(values)

        def section(match: re.Match) -> str:
            return match.group(2) if values.get(match.group(1)) else ""

        body = _SECTION.sub(section, self.text)
        return _FIELD.sub(lambda m: str(values[m.group(1)] if values[m.group(1)] is not None else ""), body).strip() + "\n"


class Prompts:
    """Looks templates up in an override folder first, then in the built-in one, in the language
    asked for (or the forced one), and remembers which versions it handed out."""

    def __init__(self, override_dir: str | Path | None = None, language: str | None = None):
        self.override_dir = Path(override_dir) if override_dir else None
        if self.override_dir and not self.override_dir.is_dir():
            raise InputError(f"{self.override_dir}: prompts folder not found")
        self.forced = check_language(language) if language else None
        self._templates: dict[tuple[str, str], Template] = {}
        self._rules: dict[tuple[str, str], str] = {}

    def language(self, language: str | None = None) -> str:
        """The language a prompt is written in for an item of `language`: the forced one first."""
        return self.forced or check_language(language or DEFAULT_LANGUAGE)

    def get(self, name: str, language: str | None = None) -> Template:
        key = (self.language(language), name)
        if key not in self._templates:
            path = self._find(f"{name}.txt", key[0])
            if path is None:
                raise InputError(f"prompt template {_in(key[0], name + '.txt')} not found in {self._where()}")
            self._templates[key] = Template(name=name, text=path.read_text(encoding="utf-8"), path=path)
        return self._templates[key]

    def task_rule(self, task: str | None, language: str | None = None) -> str:
        """The built-in (or overridden) judging rule for a task, matched by its slug; '' if none."""
        if not task:
            return ""
        key = (self.language(language), task)
        if key not in self._rules:
            path = self._find(f"rules/{slug(task)}.txt", key[0])
            self._rules[key] = path.read_text(encoding="utf-8").strip() if path else ""
        return self._rules[key]

    def versions(self) -> dict:
        """What a results file records: the forced language (or None) and the sha256 of every
        template handed out so far, by language and name."""
        used: dict[str, dict[str, str]] = {}
        for (language, name), template in sorted(self._templates.items()):
            used.setdefault(language, {})[name] = template.sha256
        return {"forced_language": self.forced, "templates": used}

    def _find(self, relative: str, language: str) -> Path | None:
        for folder in (self.override_dir, BUILTIN_DIR):
            if folder and (folder / _in(language, relative)).is_file():
                return folder / _in(language, relative)
        return None

    def _where(self) -> str:
        return f"{self.override_dir} or {BUILTIN_DIR}" if self.override_dir else str(BUILTIN_DIR)


def check_language(language: str) -> str:
    if language not in LANGUAGES:
        raise InputError(f"language {language!r} has no prompts; use one of {', '.join(LANGUAGES)}")
    return language


def _in(language: str, relative: str) -> str:
    return relative if language == DEFAULT_LANGUAGE else f"{language}/{relative}"


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
