"""The platform's LLM call path runs one way (services -> client -> engine -> context): the
import-linter contract checks real imports; this checks the type-only ones too, which the
linter is told to ignore (a type named back up the path is still a circle a reader follows)."""

import ast
from pathlib import Path

LLM = Path(__file__).resolve().parents[2] / "llm"
PATH = ["services", "client", "engine", "context"]


def imported_llm_modules(name: str) -> set[str]:
    tree = ast.parse((LLM / f"{name}.py").read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module:
                found.add(node.module.split(".")[0])
            elif node.level == 1:
                found |= {alias.name for alias in node.names}
            elif node.module and node.module.startswith("llm."):
                found.add(node.module.split(".")[1])
    return found


def test_no_module_on_the_call_path_imports_one_above_it():
    for depth, name in enumerate(PATH):
        above = set(PATH[:depth])
        assert not imported_llm_modules(name) & above, f"llm/{name}.py imports {imported_llm_modules(name) & above}"


def test_the_check_sees_a_type_only_import():
    assert "client" in imported_llm_modules("services")  # the reader finds relative imports
