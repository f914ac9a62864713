"""The harness as its own distribution: `python -m build` gives a wheel and an sdist of exactly its
source, with no required dependency, the provider extras and a console script. Offline: the build
runs without isolation, on the setuptools of the test environment."""

import email
import shutil
import subprocess
import sys
import tarfile
import zipfile

import benchforge_harness
from benchforge_harness import distribution
from tests.conftest import REPO_ROOT


def metadata(wheel) -> email.message.Message:
    with zipfile.ZipFile(wheel) as archive:
        return email.message_from_bytes(archive.read(f"benchforge_harness-{benchforge_harness.__version__}.dist-info/METADATA"))


def test_python_m_build_gives_a_wheel_and_sdist_of_exactly_the_harness_source(tmp_path):
    source = tmp_path / "benchforge_harness"
    shutil.copytree(REPO_ROOT / "benchforge_harness", source, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"))
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(tmp_path / "dist"), str(source)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    wheel = tmp_path / "dist" / distribution.wheel_name()
    sdist = tmp_path / "dist" / f"benchforge_harness-{benchforge_harness.__version__}.tar.gz"
    assert sorted(p.name for p in (tmp_path / "dist").iterdir()) == sorted([wheel.name, sdist.name])

    # Every module of every package and every prompt is in the wheel (a new subpackage missing
    # from pyproject.toml's list would fail here), and nothing else of the folder.
    source_files = distribution.source_files(REPO_ROOT / "benchforge_harness")
    assert "scoring/judges.py" in source_files and "prompts/pointwise.txt" in source_files
    with zipfile.ZipFile(wheel) as archive:
        packed = {n for n in archive.namelist() if not n.startswith("benchforge_harness-")}
        entry_points = archive.read(f"benchforge_harness-{benchforge_harness.__version__}.dist-info/entry_points.txt").decode()
    assert packed == {f"benchforge_harness/{name}" for name in source_files if name != "pyproject.toml"}
    with tarfile.open(sdist) as archive:
        top = f"benchforge_harness-{benchforge_harness.__version__}/"
        in_sdist = {m.name.removeprefix(top) for m in archive.getmembers() if m.isfile()}
    assert set(source_files) <= in_sdist  # the sdist rebuilds the same wheel

    meta = metadata(wheel)
    assert meta["Name"] == "benchforge-harness" and meta["Version"] == benchforge_harness.__version__
    requires = meta.get_all("Requires-Dist") or []
    assert requires and all("extra ==" in r for r in requires), requires  # no required dependency
    assert {"openai", "zai", "zhipuai"} <= set(meta.get_all("Provides-Extra"))
    assert any(r.startswith("openai") and 'extra == "openai"' in r for r in requires)
    assert any(r.startswith("zai-sdk") and 'extra == "zai"' in r for r in requires)
    assert "benchforge-harness = benchforge_harness.cli:main" in entry_points


def test_the_platform_built_wheel_matches_the_standard_build_and_is_reproducible(tmp_path):
    first = distribution.build_wheel(tmp_path / "a")
    second = distribution.build_wheel(tmp_path / "b")
    assert first.name == distribution.wheel_name()
    assert first.read_bytes() == second.read_bytes()  # a rebuilt release keeps the same bytes
    assert metadata(first)["Name"] == "benchforge-harness"


def test_the_source_leaves_out_build_leftovers_caches_and_non_packages(tmp_path):
    root = tmp_path / "benchforge_harness"
    distribution.copy_source(root, REPO_ROOT / "benchforge_harness")
    for leftover in (
        "build/lib/harness/cli.py",
        "benchforge_harness.egg-info/SOURCES.txt",
        "__pycache__/cli.cpython-311.pyc",
        "notes/scratch.py",  # a folder without __init__.py is not a package
        "dist/benchforge_harness-0.0.0.tar.gz",
    ):
        (root / leftover).parent.mkdir(parents=True, exist_ok=True)
        (root / leftover).write_text("x")
    kept = distribution.source_files(root)
    assert kept == distribution.source_files(REPO_ROOT / "benchforge_harness")
    assert not any(name.startswith(("build/", "dist/", "notes/")) or "egg-info" in name for name in kept)


def test_building_the_bundled_harness_as_its_readme_says_leaves_the_bundle_verified(tmp_path):
    from benchforge_harness.bundle import verify, write_manifest

    bundle = tmp_path / "bench-1.0.0"
    distribution.copy_source(bundle / "benchforge_harness")
    (bundle / "items.jsonl").write_text('{"id": "1", "question": "q"}\n', encoding="utf-8")
    write_manifest(bundle, name="bench", version="1.0.0")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "benchforge_harness/"], cwd=bundle, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    left = {p.relative_to(bundle).parts[1] for p in (bundle / "benchforge_harness").rglob("*") if p.is_file()}
    assert "dist" in left and any(name.endswith(".egg-info") for name in left)  # what a build leaves
    assert verify(bundle) == []
    # Anything else added to the harness folder is still an addition, and a listed file still checked.
    (bundle / "benchforge_harness" / "evil.py").write_text("print('smuggled')", encoding="utf-8")
    (bundle / "benchforge_harness" / "cli.py").write_text("changed", encoding="utf-8")
    assert verify(bundle) == [
        "benchforge_harness/cli.py: sha256 differs from the manifest (the file was changed or damaged)",
        "benchforge_harness/evil.py: not listed in the manifest",
    ]


def test_a_bundle_of_a_harness_before_the_rename_runs_under_its_old_package_name():
    """Frozen bundles keep the harness they were built with: before 0.3.0 it installed `harness`."""
    assert [distribution.import_name(v) for v in ("0.1.0", "0.2.9", "0.3.0", "1.0.0")] == [
        "harness",
        "harness",
        "benchforge_harness",
        "benchforge_harness",
    ]
    assert distribution.import_name() == distribution.import_name(benchforge_harness.__version__) == "benchforge_harness"
