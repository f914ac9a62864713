"""Small, strict file helpers shared by every harness command."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from benchforge_harness.tabular import JSONL, FileProblem, TableReader


class InputError(ValueError):
    """A user-supplied file is unusable; the message says where and why."""


def iter_jsonl(path: str | os.PathLike) -> Iterator[dict[str, Any]]:
    """Yield one object per non-blank line; a bad line raises InputError naming the line."""
    for _, row in iter_jsonl_numbered(path):
        yield row


def iter_jsonl_numbered(path: str | os.PathLike) -> Iterator[tuple[int, dict[str, Any]]]:
    """Like iter_jsonl, with each object's line number (for "file:line" messages). Read by
    benchforge_harness.tabular: a byte that is not UTF-8, a line that is not one JSON object, nesting past
    its limit: InputError naming the file and the line."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: file not found")
    with path.open("rb") as fh:
        reader = TableReader(fh, name=str(path), format=JSONL)
        try:
            for record in reader:
                if record.problem:
                    raise InputError(f"{path}:{record.line}: {record.problem}")
                yield record.line, record.value
        except FileProblem as exc:
            raise InputError(exc.message) from None


def write_jsonl(path: str | os.PathLike, rows: Iterable[dict[str, Any]]) -> int:
    """Write atomically (temp file + rename) so a crash never leaves half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
                count += 1
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return count


def write_json(path: str | os.PathLike, obj: Any) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(obj, fh, ensure_ascii=False, indent=2, sort_keys=False)
            fh.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
