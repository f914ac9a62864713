"""The harness's front door: the public API is what the CLI and the platform use, the README's
library example runs as written, and the platform reaches nothing internal."""

import ast
import importlib
import json
import re
import subprocess
import sys

import pytest

import benchforge_harness
from benchforge_harness import distribution
from tests.conftest import REPO_ROOT

README = (REPO_ROOT / "benchforge_harness" / "README.md").read_text(encoding="utf-8")
# The modules whose __all__ is public (benchforge_harness/__init__.py says so); everything else is internal.
PUBLIC_MODULES = (
    "benchforge_harness",
    "benchforge_harness.scoring",
    "benchforge_harness.llm",
    "benchforge_harness.cli",
    "benchforge_harness.distribution",
    "benchforge_harness.tabular",
    "benchforge_harness.metrics",
    "benchforge_harness.anchors",
)
PLATFORM = (
    "annotation",
    "benchforge",
    "curation",
    "dashboard",
    "demo",
    "exports",
    "humaneval",
    "jobs",
    "labelstudio",
    "llm",
    "qc",
    "review",
    "rewrite",
)


def public_names(module: str) -> set[str]:
    loaded = importlib.import_module(module)
    return set(getattr(loaded, "__all__", None) or [n for n in vars(loaded) if not n.startswith("_")])


def test_every_public_name_resolves_and_importing_the_package_loads_nothing_else():
    for module in ("benchforge_harness", "benchforge_harness.scoring", "benchforge_harness.llm"):
        for name in importlib.import_module(module).__all__:
            assert getattr(importlib.import_module(module), name) is not None, f"{module}.{name}"
    assert benchforge_harness.verify_bundle is importlib.import_module("benchforge_harness.bundle").verify
    with pytest.raises(AttributeError, match="no attribute 'calls'"):
        benchforge_harness.__getattr__("calls")
    # `python -m benchforge_harness verify` on a bare machine should not pay for the scoring stack.
    check = "import sys, benchforge_harness; print(sorted(m for m in sys.modules if m.startswith('benchforge_harness.')))"
    done = subprocess.run([sys.executable, "-c", check], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert json.loads(done.stdout.replace("'", '"')) == []


def test_the_version_is_semantic_and_the_readme_names_this_wheel():
    assert re.fullmatch(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)", benchforge_harness.__version__)
    assert distribution.wheel_name() in README


def imports_of_harness(path):
    """(line, module, names) for each import of the harness in a platform file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "benchforge_harness":
            yield node.lineno, node.module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "benchforge_harness":
                    bound.add(alias.asname or alias.name)
                    yield node.lineno, alias.name, []
    for node in ast.walk(tree):  # benchforge_harness.NAME after `import benchforge_harness`
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound:
            yield node.lineno, node.value.id, [node.attr]


def test_the_platform_uses_only_the_public_api():
    offences = []
    for package in PLATFORM:
        for path in sorted((REPO_ROOT / package).rglob("*.py")):
            for line, module, names in imports_of_harness(path):
                where = f"{path.relative_to(REPO_ROOT)}:{line}"
                if module not in PUBLIC_MODULES:
                    offences.append(f"{where} imports the internal module {module}")
                    continue
                public = public_names(module) | {"__version__"}
                offences += [f"{where} uses {module}.{n}, which is not in its __all__" for n in names if n not in public]
    assert not offences, "\n".join(offences)


def readme_example() -> str:
    section = README[README.index("## As a library") :]
    return re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)


def test_the_readme_library_example_runs_as_written(tmp_path, fake_llm, monkeypatch, capsys):
    release = tmp_path / "my-benchmark-1.0"
    items = [
        {"id": "s1", "question": "How many apples?", "reference_answer": "Three.", "task": "Counting"},
        {"id": "s1-r1", "seed_id": "s1", "question": "Count the apples.", "reference_answer": "Three.", "task": "Counting"},
        {"id": "s2", "question": "What colour?", "reference_answer": "Red.", "task": "Colour"},
        {"id": "m1", "question": "Which?", "choices": {"A": "pear", "B": "apple"}, "answer": "B", "task": "Fruit"},
    ]
    (release / "predictions").mkdir(parents=True)
    (release / "items.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items), encoding="utf-8")
    answers = {"s1": "[9] three", "s1-r1": "[6] three", "s2": "[3] blue"}
    (release / "predictions" / "my-vlm.jsonl").write_text(
        "".join(json.dumps({"id": i, "model": "my-vlm", "answer": a}) + "\n" for i, a in answers.items()), encoding="utf-8"
    )
    (tmp_path / "models.toml").write_text(
        f'[models.judge]\nprovider = "openai"\nbase_url = "{fake_llm.base_url("openai")}"\nmodel = "judge"\n'
        'api_key_env = "HARNESS_TEST_KEY"\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("HARNESS_TEST_KEY", "x")

    def judge(body):  # grades by the "[n]" marker in the answer under review
        answer = body["messages"][0]["content"].split("[Assistant's answer]")[1]
        return json.dumps({"rating": int(answer.split("[")[1].split("]")[0]), "reason": "ok"})

    fake_llm.script("judge", judge)
    monkeypatch.chdir(tmp_path)
    exec(compile(readme_example(), "benchforge_harness/README.md", "exec"), {})
    # Mean of 9, 6 and 3; one seed group (s1, s1-r1) with population std 1.5: alignment 1 / 1.5.
    assert capsys.readouterr().out.strip() == f"3 answers graded, mean 6.00, alignment {1 / 1.5}"
    assert len(fake_llm.requests("judge")) == 3
