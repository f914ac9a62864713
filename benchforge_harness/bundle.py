"""Release bundles on disk and in archives: the manifest (sha256 of every file), verification, and
deterministic archives (the same folder always gives byte-identical .tar.gz and .zip files).

    manifest.json  {"name", "version", "created_at", "schema_version", "harness_version", "counts",
                    "source_release", "files": {relative path: {"sha256", "size"}}, ...}

`python -m benchforge_harness verify PATH` checks a folder, a .tar.gz or a .zip against its manifest: every
listed file present with its digest, nothing unlisted.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import tarfile
import zipfile
import zlib
from pathlib import Path, PurePosixPath

MANIFEST = "manifest.json"
CHUNK = 1 << 20
# Archive entries carry this time (2000-01-01 UTC), not the build's: same content, same bytes.
FIXED_TIME = 946684800
ZIP_TIME = (2000, 1, 1, 0, 0, 0)


def sha256_file(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def bundle_files(root: str | os.PathLike) -> list[str]:
    """Every file under `root` as a sorted list of POSIX relative paths (the manifest excluded)."""
    root = Path(root)
    found = [p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()]
    return sorted(name for name in found if name != MANIFEST)


def write_manifest(root: str | os.PathLike, **fields) -> dict:
    """Write root/manifest.json: `fields` plus the digest and size of every other file."""
    root = Path(root)
    files = {name: {"sha256": sha256_file(root / name), "size": (root / name).stat().st_size} for name in bundle_files(root)}
    manifest = {**fields, "files": files}
    (root / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    return manifest


# ---- verification ---------------------------------------------------------------------------------


def _members(path: Path):
    """(name, bytes reader) for every file of a folder, .tar.gz or .zip, with the top folder of an
    archive (<slug>-<version>/) removed."""
    if path.is_dir():
        for name in [*bundle_files(path), MANIFEST]:
            if (path / name).is_file():
                yield name, (lambda name=name: (path / name).open("rb"))
        return
    if path.name.endswith((".tar.gz", ".tgz")):
        with tarfile.open(path, "r:gz") as archive:
            for member in archive.getmembers():
                if member.isfile():
                    yield _strip_top(member.name), (lambda member=member: archive.extractfile(member))
        return
    if path.suffix == ".zip":
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                if not info.is_dir():
                    yield _strip_top(info.filename), (lambda info=info: archive.open(info))
        return
    raise ValueError(f"{path}: not a folder, a .tar.gz or a .zip")


def _strip_top(name: str) -> str:
    parts = PurePosixPath(name).parts
    return PurePosixPath(*parts[1:]).as_posix() if len(parts) > 1 else name


READ_ERRORS = (OSError, tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error, ValueError)


def verify(path: str | os.PathLike) -> list[str]:
    """Problems found in a bundle (empty: it matches its manifest)."""
    path = Path(path)
    if not path.exists():
        return [f"{path}: not found"]
    if not path.is_dir():
        return _verify_archive(path)  # read in one pass, digesting as it goes
    return _check(dict(_members(path)))


def _verify_archive(path: Path) -> list[str]:
    digests, manifest_bytes = {}, None
    try:
        for name, opener in _members(path):
            with opener() as handle:
                if name == MANIFEST:
                    manifest_bytes = handle.read()
                    continue
                digest, size = hashlib.sha256(), 0
                while block := handle.read(CHUNK):
                    digest.update(block)
                    size += len(block)
                digests[name] = (digest.hexdigest(), size)
    except READ_ERRORS as exc:
        return [f"{path}: cannot be read ({exc})"]
    if manifest_bytes is None:
        return [f"{path}: no {MANIFEST}"]
    return _compare(manifest_bytes, digests)


def _check(members: dict) -> list[str]:
    if MANIFEST not in members:
        return [f"no {MANIFEST}"]
    with members.pop(MANIFEST)() as handle:
        manifest_bytes = handle.read()
    digests = {}
    for name, opener in members.items():
        digest, size = hashlib.sha256(), 0
        with opener() as handle:
            while block := handle.read(CHUNK):
                digest.update(block)
                size += len(block)
        digests[name] = (digest.hexdigest(), size)
    return _compare(manifest_bytes, digests)


def _compare(manifest_bytes: bytes, digests: dict[str, tuple[str, int]]) -> list[str]:
    try:
        listed = json.loads(manifest_bytes)["files"]
    except (ValueError, KeyError, TypeError):
        return [f"{MANIFEST} is not a bundle manifest (no 'files' object)"]
    problems = []
    for name, expected in sorted(listed.items()):
        if name not in digests:
            problems.append(f"{name}: listed in the manifest but missing")
        elif digests[name][0] != expected.get("sha256"):
            problems.append(f"{name}: sha256 differs from the manifest (the file was changed or damaged)")
    unlisted = sorted(name for name in set(digests) - set(listed) if not is_working_file(name))
    problems += [f"{name}: not listed in the manifest" for name in unlisted]
    return problems


# What benchforge_harness/README.md tells people to create next to the release, and what running the harness
# from inside it leaves (the response cache, Python's bytecode, Inspect's logs): never part of a bundle, so
# `verify` does not count them as additions. Every file the manifest lists is checked all the same.
WORKING_FILES = ("models.toml", "predictions", "results", ".harness-cache", "logs")
# Building the bundled harness as its README says (`python -m build benchforge_harness/`) leaves these in
# its folder (`harness/` in bundles of releases made before 0.3.0): build outputs, not additions.
HARNESS_FOLDERS = ("benchforge_harness", "harness")
BUILD_OUTPUTS = ("build", "dist")


def is_working_file(name: str) -> bool:
    parts = name.split("/")
    if parts[0] in WORKING_FILES or "__pycache__" in parts[:-1]:
        return True
    return len(parts) > 2 and parts[0] in HARNESS_FOLDERS and (parts[1] in BUILD_OUTPUTS or parts[1].endswith(".egg-info"))


# ---- deterministic archives -------------------------------------------------------------------------


def write_tar_gz(root: str | os.PathLike, dest: str | os.PathLike, *, top: str, level: int = 6) -> None:
    """root/* as dest (a .tar.gz) under the folder `top`/, byte-identical for the same files:
    sorted entries, fixed times and owners, no name or time in the gzip header."""
    root = Path(root)
    with open(dest, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=level) as gz:
        with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as archive:
            for name in [MANIFEST, *bundle_files(root)]:
                info = tarfile.TarInfo(f"{top}/{name}")
                info.size = (root / name).stat().st_size
                info.mtime, info.mode, info.uid, info.gid, info.uname, info.gname = FIXED_TIME, 0o644, 0, 0, "", ""
                with open(root / name, "rb") as handle:
                    archive.addfile(info, handle)


# Already-compressed files are stored, not deflated again (no gain, much time).
STORED_SUFFIXES = (".jpg", ".jpeg", ".png", ".gif", ".webp", ".parquet", ".gz", ".zip")


def write_zip(root: str | os.PathLike, dest: str | os.PathLike, *, top: str) -> None:
    """root/* as dest (a .zip) under `top`/, byte-identical for the same files."""
    root = Path(root)
    with zipfile.ZipFile(dest, "w") as archive:
        for name in [MANIFEST, *bundle_files(root)]:
            info = zipfile.ZipInfo(f"{top}/{name}", date_time=ZIP_TIME)
            info.external_attr = 0o644 << 16
            stored = name.lower().endswith(STORED_SUFFIXES)
            info.compress_type = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
            with open(root / name, "rb") as source, archive.open(info, "w", force_zip64=True) as target:
                while block := source.read(CHUNK):
                    target.write(block)


def read_manifest(path: str | os.PathLike) -> dict:
    """The manifest of a folder or archive."""
    for name, opener in _members(Path(path)):
        if name == MANIFEST:
            with opener() as handle:
                return json.loads(handle.read())
    raise ValueError(f"{path}: no {MANIFEST}")


def iter_bytes(path: str | os.PathLike):
    """For tests and tools: (name, content) of every file of a folder or archive."""
    for name, opener in _members(Path(path)):
        with opener() as handle:
            yield name, handle.read()
