"""The interface's translation catalogs: locale/<language>/LC_MESSAGES/django.po in the repo.

`compile` writes each .mo beside its .po with polib (pure Python: a clean machine has no msgfmt);
the Makefile runs it at install. `problems` is what the catalog check in the test suite reports:
entries left untranslated or fuzzy. `MAKEMESSAGES_OPTIONS` are the options the catalog is kept up
to date with (`python manage.py makemessages -l zh_Hans` plus these), in one place for the
developer and the check.
"""

import ast
import sys
from pathlib import Path

import polib

LOCALE_DIR = Path(__file__).resolve().parent.parent / "locale"
# No file locations: a moved line does not change the catalog; the harness and the tests hold no
# interface text.
MAKEMESSAGES_OPTIONS = ["--no-location", "--no-obsolete", "--ignore=benchforge_harness/*", "--ignore=tests/*", "--ignore=bench/*"]


# The translation functions makemessages (xgettext with Django's keywords) reads a message from, by name.
TRANSLATION_FUNCTIONS = {
    "gettext",
    "gettext_lazy",
    "gettext_noop",
    "ngettext",
    "ngettext_lazy",
    "pgettext",
    "pgettext_lazy",
    "npgettext",
    "npgettext_lazy",
}
SEEN_NAMES = TRANSLATION_FUNCTIONS | {"_"}
SKIPPED_DIRS = {".venv", "node_modules", "benchforge_harness", "tests", "bench", "var", "staticfiles", "build"}


def hidden_translations(root: Path = LOCALE_DIR.parent) -> list[str]:
    """Translation functions called under a name makemessages does not know (`gettext as
    gettext_now`, `t = gettext`): their messages never reach the catalog, so they stay English
    however complete it looks. One line per alias, naming the file."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if SKIPPED_DIRS & set(path.relative_to(root).parts):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        where = path.relative_to(root)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "django.utils.translation":
                for alias in node.names:
                    if alias.name in TRANSLATION_FUNCTIONS and alias.asname and alias.asname not in SEEN_NAMES:
                        found.append(f"{where}:{node.lineno}: {alias.name} imported as {alias.asname}")
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in SEEN_NAMES:
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id not in SEEN_NAMES:
                        found.append(f"{where}:{node.lineno}: {node.value.id} assigned to {target.id}")
    return found


def catalogs(locale_dir: Path = LOCALE_DIR) -> list[Path]:
    return sorted(locale_dir.glob("*/LC_MESSAGES/django.po"))


def compile_all(locale_dir: Path = LOCALE_DIR) -> list[Path]:
    written = []
    for po_path in catalogs(locale_dir):
        mo_path = po_path.with_suffix(".mo")
        polib.pofile(str(po_path)).save_as_mofile(str(mo_path))
        written.append(mo_path)
    return written


def problems(po_path: Path) -> list[str]:
    """Untranslated and fuzzy entries, one line each."""
    catalog = polib.pofile(str(po_path))
    found = [f"untranslated: {entry.msgid!r}" for entry in catalog.untranslated_entries()]
    found += [f"fuzzy: {entry.msgid!r}" for entry in catalog.fuzzy_entries()]
    return found


def entry_keys(po_path: Path) -> set[tuple]:
    """What makemessages decides: the (context, message, plural) of every live entry."""
    return {(e.msgctxt, e.msgid, e.msgid_plural) for e in polib.pofile(str(po_path)) if not e.obsolete and e.msgid}


if __name__ == "__main__":
    if sys.argv[1:] != ["compile"]:
        sys.exit("usage: python -m benchforge.catalogs compile")
    for path in compile_all():
        print(f"compiled {path.relative_to(LOCALE_DIR.parent)}")
