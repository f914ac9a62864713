"""Content-addressed image files: their names, and writing each once on local disk.

Needs no Django settings: ingest's worker processes (curation.hashing) write files with it too.
A name is made of the file's SHA-256 and a known extension, so the same name always carries
the same bytes and can never leave the folder it is written under.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from django.utils._os import safe_makedirs

from .imaging import ImageAnalysis

# Exactly the names content_name makes: stored images and thumbnails. The media view serves
# nothing else (an uploaded archive under imports/, a path with ".."), and write_once writes
# nothing else.
STORED_NAME = re.compile(r"(?:images|thumbs)/([0-9a-f]{2})/([0-9a-f]{2})/(\1\2[0-9a-f]{60})\.(?:jpg|png|webp|gif|bmp|tif)")


def content_name(folder: str, sha256: str, ext: str) -> str:
    return f"{folder}/{sha256[:2]}/{sha256[2:4]}/{sha256}.{ext}"


def stored_files(analysis: ImageAnalysis, data: bytes) -> tuple[tuple[str, bytes], ...]:
    """(name, bytes) of the files an image is stored as: the file, and its thumbnail unless the
    file serves as its own (a small plain JPEG or PNG: analysis.thumbnail is None)."""
    file = (content_name("images", analysis.sha256, analysis.extension), data)
    if analysis.thumbnail is None:
        return (file,)
    return file, (content_name("thumbs", analysis.sha256, "jpg"), analysis.thumbnail)


@dataclass(frozen=True)
class Disk:
    """A local media folder and the modes its storage gives new files and folders."""

    root: str
    file_mode: int | None = None
    dir_mode: int | None = None


# Folders known to exist, so each write checks none (2 x 65,536 at most), per process.
_made_dirs: set[str] = set()


def write_once(disk: Disk, name: str, data: bytes) -> bool:
    """Write content-addressed bytes under `disk` unless a file of that name exists (it holds
    these bytes); True when this call created the file. One exclusive create (O_EXCL never
    overwrites, so two writers of the same bytes cannot clash) instead of a storage's existence
    check, name search and lock; a partial file is removed. Modes and group as Django's
    FileSystemStorage gives them."""
    if not STORED_NAME.fullmatch(name):
        raise ValueError(f"not a content-addressed name: {name!r}")
    path = os.path.join(disk.root, name)
    folder = os.path.dirname(path)
    if folder not in _made_dirs:
        _make_folder(disk, folder)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except FileExistsError:
        return False
    except FileNotFoundError:  # the folder went since (media cleared): make it again
        _make_folder(disk, folder)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            return False
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if disk.file_mode is not None:
                os.fchmod(handle.fileno(), disk.file_mode)
            _same_group_as_root(disk.root, handle.fileno())
    except BaseException:
        os.unlink(path)  # never leave a partial file under a content-addressed name
        raise
    return True


def _make_folder(disk: Disk, folder: str) -> None:
    if disk.dir_mode is None:
        os.makedirs(folder, exist_ok=True)
    else:
        safe_makedirs(folder, disk.dir_mode, exist_ok=True)
    _made_dirs.add(folder)


def _same_group_as_root(root: str, fd: int) -> None:
    # What FileSystemStorage does after a save; only needed when this process's group differs.
    if os.name != "posix":
        return
    root_gid = _root_gids.get(root)
    if root_gid is None:
        root_gid = _root_gids[root] = os.stat(root).st_gid
    if os.getegid() != root_gid:
        try:
            os.fchown(fd, -1, root_gid)
        except PermissionError:
            pass


_root_gids: dict[str, int] = {}  # a media folder's group, read once per process
