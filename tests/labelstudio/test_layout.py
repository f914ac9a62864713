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


def test_only_the_client_imports_the_sdk_and_only_when_used():
    # The SDK is an optional extra: the app must load without it, and only labelstudio.client wraps it.
    skip = {".venv", ".git", "node_modules", "tests"}
    offenders = sorted(
        str(path.relative_to(ROOT))
        for path in ROOT.rglob("*.py")
        if not skip & set(path.relative_to(ROOT).parts)
        and path != ROOT / "labelstudio" / "client.py"
        and any(module.split(".")[0] == "label_studio_sdk" for module in imported_modules(path))
    )
    assert offenders == []
    client = ast.parse((ROOT / "labelstudio" / "client.py").read_text())
    top_level = [node for node in client.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    assert not [node for node in top_level if "label_studio_sdk" in ast.unparse(node)]
