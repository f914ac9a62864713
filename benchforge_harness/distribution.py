"""The harness as software: its source tree (the folder a release carries) and its wheel.

This folder is both the `benchforge_harness` package and the project that builds it (pyproject.toml beside
__init__.py). source_files() says which of its files are the source, so a release's copy holds
exactly what `python -m build` packs, and no build leftovers (build/, *.egg-info) or caches.
build_wheel() builds the wheel from such a copy with setuptools, the backend pyproject.toml
names; only the platform calls it (setuptools is the platform's dependency, never the harness's).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from benchforge_harness import __version__

DIST_NAME = "benchforge-harness"
ROOT = Path(__file__).resolve().parent
# Wheel timestamps (SOURCE_DATE_EPOCH, 2000-01-01 UTC): a rebuild from the same source gives the same bytes.
_EPOCH = "946684800"
WHEEL_TIME = (2000, 1, 1, 0, 0, 0)


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


# Modes of what the harness writes, whatever the umask of the process that builds it.
FILE_MODE, FOLDER_MODE = 0o644, 0o755


def copy_source(target: str | os.PathLike, root: str | os.PathLike = ROOT) -> list[str]:
    """Copy the source under root into target (created); returns the copied paths. Files get mode
    0644 and folders 0755 (not the process's default, which its umask decides)."""
    target, files = Path(target), source_files(root)
    target.mkdir(parents=True, exist_ok=True)
    made = set()  # each folder once, not once per file in it (89 files, 17 folders)
    for name in files:
        for folder in reversed(Path(name).parents):
            if folder not in made:
                (target / folder).mkdir(exist_ok=True)
                os.chmod(target / folder, FOLDER_MODE)
                made.add(folder)
        shutil.copyfile(Path(root) / name, target / name)
        os.chmod(target / name, FILE_MODE)
    return files


def wheel_name(version: str = __version__) -> str:
    return f"{DIST_NAME.replace('-', '_')}-{version}-py3-none-any.whl"


def import_name(version: str = __version__) -> str:
    """The package the harness of `version` installs: `harness` before 0.3.0 (a name another project
    has on PyPI), `benchforge_harness` since; what `python -m` runs in a bundle of that version."""
    major, minor = (int(part) for part in version.split(".")[:2])
    return "harness" if (major, minor) < (0, 3) else "benchforge_harness"


def build_wheel(out_dir: str | os.PathLike, root: str | os.PathLike = ROOT) -> Path:
    """Build the wheel of the harness source under root into out_dir; returns its path.
    Built from a scratch copy (setuptools leaves build/ and *.egg-info beside the source) in a
    child process (setuptools changes directory and keeps global state); needs setuptools."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="harness-build-") as scratch:
        source = Path(scratch) / "benchforge_harness"
        copy_source(source, root)
        hook = "import sys; from setuptools import build_meta; print(build_meta.build_wheel(sys.argv[1]))"
        # The builder's clock, zone, locale and hash seed stay out of the bytes.
        env = {**os.environ, "SOURCE_DATE_EPOCH": _EPOCH, "PYTHONPATH": "", "TZ": "UTC", "LC_ALL": "C.UTF-8"}
        env["PYTHONHASHSEED"] = "0"
        done = subprocess.run(
            [sys.executable, "-c", hook, str(Path(scratch) / "dist")], cwd=source, env=env, capture_output=True, text=True
        )
        if done.returncode != 0:
            raise RuntimeError(f"building the harness wheel failed:\n{done.stderr.strip()[-2000:]}")
        name = done.stdout.strip().splitlines()[-1]
        wheel = out_dir / name
        normalise_wheel(Path(scratch) / "dist" / name, wheel)
        return wheel


def normalise_wheel(source: str | os.PathLike, dest: str | os.PathLike) -> None:
    """Copy a wheel with every entry's metadata fixed: Unix mode 0644 (setuptools records the modes
    of the files it built from, which the builder's umask decides), the 2000-01-01 time, deflated,
    in the order the build wrote them. The contents, and so the RECORD's digests, are untouched."""
    with zipfile.ZipFile(source) as built, zipfile.ZipFile(dest, "w") as out:
        for entry in built.infolist():
            info = zipfile.ZipInfo(entry.filename, date_time=WHEEL_TIME)
            info.create_system = 3  # Unix: the mode below is what pip applies when it installs
            info.external_attr = (stat.S_IFREG | FILE_MODE) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            out.writestr(info, built.read(entry))
