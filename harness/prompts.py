"""Prompt templates: plain text files in harness/prompts/, editable in any release.

Syntax: `{{name}}` inserts a value; `{{#name}}...{{/name}}` keeps the block only when the value
is non-empty. Values are inserted in one pass, so text inside a value is never re-read as a
placeholder. A folder given with --prompts overrides any template it contains.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from harness.io import InputError

BUILTIN_DIR = Path(__file__).with_name("prompts")
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
    """Looks templates up in an override folder first, then in the built-in one."""

    def __init__(self, override_dir: str | Path | None = None):
        self.override_dir = Path(override_dir) if override_dir else None
        if self.override_dir and not self.override_dir.is_dir():
            raise InputError(f"{self.override_dir}: prompts folder not found")
        self._rules: dict[str, str] = {}

    def get(self, name: str) -> Template:
        path = self._find(f"{name}.txt")
        if path is None:
            raise InputError(f"prompt template {name}.txt not found in {self._where()}")
        return Template(name=name, text=path.read_text(encoding="utf-8"), path=path)

    def task_rule(self, task: str | None) -> str:
        """The built-in (or overridden) judging rule for a task, matched by its slug; '' if none."""
        if not task:
            return ""
        if task not in self._rules:
            path = self._find(f"rules/{slug(task)}.txt")
            self._rules[task] = path.read_text(encoding="utf-8").strip() if path else ""
        return self._rules[task]

    def _find(self, relative: str) -> Path | None:
        for folder in (self.override_dir, BUILTIN_DIR):
            if folder and (folder / relative).is_file():
                return folder / relative
        return None

    def _where(self) -> str:
        return f"{self.override_dir} or {BUILTIN_DIR}" if self.override_dir else str(BUILTIN_DIR)


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
