"""Content-addressed files on local disk: only content names are written, each once, with the
storage's modes; what ingest's worker processes write with."""

import hashlib
import os
import stat

import pytest

from curation.content import Disk, content_name, write_once


def test_a_content_name_is_written_once_with_the_storages_modes(tmp_path):
    data = b"\xff\xd8 picture"
    name = content_name("images", hashlib.sha256(data).hexdigest(), "jpg")
    disk = Disk(str(tmp_path), file_mode=0o640, dir_mode=0o750)
    assert write_once(disk, name, data) is True
    assert write_once(disk, name, b"anything else") is False  # never overwritten: the name means these bytes
    path = tmp_path / name
    assert path.read_bytes() == data
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o750 and stat.S_IMODE(path.parent.parent.stat().st_mode) == 0o750


@pytest.mark.parametrize(
    "name",
    [
        "../escape.jpg",
        "images/ab/cd/../../../../etc/passwd",
        "/etc/passwd",
        "imports/upload.zip",
        "images/ab/cd/" + "a" * 64 + ".jpg",
    ],
)
def test_nothing_but_a_content_name_is_written(tmp_path, name):
    with pytest.raises(ValueError, match="not a content-addressed name"):
        write_once(Disk(str(tmp_path / "disk")), name, b"x")
    assert not (tmp_path / "disk").exists() and not os.path.exists(tmp_path / "escape.jpg")
