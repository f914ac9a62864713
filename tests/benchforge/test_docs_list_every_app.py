"""The documents a newcomer reads first name every app the project installs: the layer list of
docs/architecture.md, the README's Layout, and the import contracts `make lint` keeps. An app
added to INSTALLED_APPS and left out of any of them fails here, naming what is missing where."""

import fnmatch
import re
import tomllib
from pathlib import Path

from django.conf import settings

REPO = Path(__file__).resolve().parents[2]


def project_apps() -> list[str]:
    """The installed apps that are packages of this repository (not Django's or a library's)."""
    return [name for name in settings.INSTALLED_APPS if "." not in name and (REPO / name / "__init__.py").is_file()]


def architecture_layers() -> set[str]:
    """The apps in the fenced block under "Apps, in layers" (first column, split on |)."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = text.split("## Apps, in layers", 1)[1].split("```", 2)[1]
    names = set()
    for line in block.splitlines():
        column = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
        names |= {word.strip() for word in column.split("|") if word.strip()}
    return names


def readme_layout() -> set[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    layout = text.split("## Layout", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"`(\w+)/`", layout))


def contracts() -> tuple[set[str], set[str]]:
    """The import-linter root packages, and the apps the layers contract places."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    # The apps' layers contract (others, such as the LLM call path's, layer modules inside one app).
    [layers] = [c for c in config["contracts"] if c["type"] == "layers" and c["name"].startswith("Apps in layers")]
    placed = {name.strip() for layer in layers["layers"] for name in layer.split("|")}
    return set(config["root_packages"]), placed


def packaged(apps: list[str]) -> list[str]:
    """The apps a plain (non-editable) install of the project leaves out: setuptools ships only the
    packages its find patterns include."""
    patterns = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"]["find"]
    return [app for app in apps if any(fnmatch.fnmatch(app, pattern) for pattern in patterns["include"])]


def missing(apps: list[str], named: set[str]) -> list[str]:
    return [app for app in apps if app not in named]


def test_every_installed_app_is_in_the_architecture_the_readme_and_the_contracts():
    apps = project_apps()
    assert {"benchforge", "jobs", "qc", "humaneval", "demo"} <= set(apps)  # the reading itself works
    roots, placed = contracts()
    gaps = {
        "docs/architecture.md (Apps, in layers)": missing(apps, architecture_layers()),
        "README.md (Layout)": missing(apps, readme_layout()),
        "pyproject.toml (importlinter root_packages)": missing(apps, roots),
        "pyproject.toml (the layers contract)": missing(apps, placed),
        "pyproject.toml (setuptools packages.find)": missing(apps, set(packaged(apps))),
    }
    assert not any(gaps.values()), {where: names for where, names in gaps.items() if names}


def test_the_check_names_an_app_a_document_leaves_out():
    """The readers above find a name that is there and miss one that is not (so the check can fail)."""
    assert "humaneval" in architecture_layers() and "humaneval" in readme_layout()
    assert missing(["qc", "nosuchapp"], architecture_layers()) == ["nosuchapp"]
    assert missing(["qc", "nosuchapp"], readme_layout()) == ["nosuchapp"]
    assert packaged(["qc", "nosuchapp"]) == ["qc"]
