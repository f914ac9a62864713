"""The app's place in the dependency graph: it reads annotation, annotation never reads it."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def imported_modules(path: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module)
    return modules


def test_annotation_never_imports_labelstudio():
    offenders = sorted(
        f"{path.relative_to(ROOT)} imports {module}"
        for path in (ROOT / "annotation").rglob("*.py")
        for module in imported_modules(path)
        if module.split(".")[0] == "labelstudio"
    )
    assert offenders == []
