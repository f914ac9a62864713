"""The harness as software: its source tree (the folder a release carries) and its wheel.

This folder is both the `harness` package and the project that builds it (pyproject.toml beside
__init__.py). source_files() says which of its files are the source, so a release's copy holds
exactly what `python -m build` packs, and no build leftovers (build/, *.egg-info) or caches.
build_wheel() builds the wheel from such a copy with setuptools, the backend pyproject.toml
names; only the platform calls it (setuptools is the platform's dependency, never the harness's).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from harness import __version__

DIST_NAME = "benchforge-harness"
ROOT = Path(__file__).resolve().parent
# Wheel timestamps (SOURCE_DATE_EPOCH, 2000-01-01 UTC): a rebuild from the same source gives the same bytes.
_EPOCH = "946684800"


def source_files(root: str | os.PathLike = ROOT) -> list[str]:
    """Relative POSIX paths of the harness source under root: the modules of every package
    (a folder with __init__.py), the prompts, README.md and pyproject.toml. Sorted."""
    root = Path(root)
    found = [name for name in ("README.md", "pyproject.toml") if (root / name).is_file()]
    for folder, dirs, files in os.walk(root):
        folder = Path(folder)
        dirs[:] = sorted(d for d in dirs if (folder / d / "__init__.py").is_file())
        found += [(folder / f).relative_to(root).as_posix() for f in files if f.endswith(".py")]
    prompts = root / "prompts"
    found += [p.relative_to(root).as_posix() for p in prompts.rglob("*.txt") if p.is_file()] if prompts.is_dir() else []
    return sorted(found)


def copy_source(target: str | os.PathLike, root: str | os.PathLike = ROOT) -> list[str]:
    """Copy the source under root into target (created); returns the copied paths."""
    target, files = Path(target), source_files(root)
    for name in files:
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(root) / name, target / name)
    return files


def wheel_name(version: str = __version__) -> str:
    return f"{DIST_NAME.replace('-', '_')}-{version}-py3-none-any.whl"


def build_wheel(out_dir: str | os.PathLike, root: str | os.PathLike = ROOT) -> Path:
    """Build the wheel of the harness source under root into out_dir; returns its path.
    Built from a scratch copy (setuptools leaves build/ and *.egg-info beside the source) in a
    child process (setuptools changes directory and keeps global state); needs setuptools."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="harness-build-") as scratch:
        source = Path(scratch) / "harness"
        copy_source(source, root)
        hook = "import sys; from setuptools import build_meta; print(build_meta.build_wheel(sys.argv[1]))"
        env = {**os.environ, "SOURCE_DATE_EPOCH": _EPOCH, "PYTHONPATH": ""}
        done = subprocess.run(
            [sys.executable, "-c", hook, str(Path(scratch) / "dist")], cwd=source, env=env, capture_output=True, text=True
        )
        if done.returncode != 0:
            raise RuntimeError(f"building the harness wheel failed:\n{done.stderr.strip()[-2000:]}")
        name = done.stdout.strip().splitlines()[-1]
        return Path(shutil.copyfile(Path(scratch) / "dist" / name, out_dir / name))
