"""The one reader of tabular and line files (benchforge_harness/tabular.py), on files shaped like real ones.

Run: .venv/bin/python bench/reading.py [--rows 3000] [--lines 200000]

Prints, for an MMBench-style TSV (`--rows` rows, each with a ~40 kB base64 image) and a JSON Lines
file (`--lines` MLLM-Bench-sized objects): MB/s and rows/s of one pass through TableReader, beside
the same file read by the csv / json modules over a TextIOWrapper (what the importers did before
issue 21), and the peak memory of the reader's pass (tracemalloc). A QC import makes two passes
(check, then store), so its reading costs twice the first column; the rest of an import (decoding
and hashing images, writing rows) takes far longer per row.
"""

from __future__ import annotations

import argparse
import base64
import csv
import io
import json
import os
import random
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchforge_harness.tabular import JSONL, TSV, TableReader  # noqa: E402

csv.field_size_limit(2**31 - 1)


def make_tsv(path: Path, rows: int) -> None:
    rng = random.Random(7)
    image = base64.b64encode(rng.randbytes(30_000)).decode()
    header = ["index", "question", "hint", "A", "B", "C", "D", "answer", "category", "l2-category", "split", "image"]
    with path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out, delimiter="\t", lineterminator="\n")
        writer.writerow(header)
        for n in range(rows):
            writer.writerow(
                [n, f"What does picture {n} show? 图中显示的是什么？", "", "a cat", "a dog", "a bird", "a fish", "A",
                 "object recognition", "perception", "dev", image]
            )  # fmt: skip


def make_jsonl(path: Path, lines: int) -> None:
    with path.open("w", encoding="utf-8") as out:
        for n in range(lines):
            row = {"id": n, "question": "Describe the image in detail. " * 4, "criteria": "1. a\n2. b\n3. c", "level": "L1"}
            out.write(json.dumps(row, ensure_ascii=False) + "\n")


def timed(fn) -> tuple[float, int]:
    start = time.perf_counter()
    count = fn()
    return time.perf_counter() - start, count


def reader_pass(path: Path, fmt: str) -> int:
    with path.open("rb") as handle:
        return sum(1 for record in TableReader(handle, name=path.name, format=fmt) if not record.problem)


def old_tsv(path: Path) -> int:
    with path.open("rb") as handle:
        reader = csv.reader(io.TextIOWrapper(handle, encoding="utf-8-sig", newline=""), delimiter="\t")
        next(reader)
        return sum(1 for _ in reader)


def old_jsonl(path: Path) -> int:
    with path.open("r", encoding="utf-8-sig") as handle:
        return sum(1 for line in handle if line.strip() and json.loads(line) is not None)


def report(name: str, path: Path, fmt: str, old) -> None:
    size = os.path.getsize(path) / 1e6
    old(path)  # warm the page cache
    tracemalloc.start()
    seconds, rows = timed(lambda: reader_pass(path, fmt))
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    seconds, rows = timed(lambda: reader_pass(path, fmt))  # untraced, for the speed
    old_seconds, old_rows = timed(lambda: old(path))
    assert rows == old_rows, (rows, old_rows)
    print(
        f"{name}: {size:.0f} MB, {rows:,} rows | TableReader {size / seconds:.0f} MB/s, {rows / seconds:,.0f} rows/s, "
        f"peak {peak:.1f} MB | before (csv/json over TextIOWrapper) {size / old_seconds:.0f} MB/s, "
        f"{old_rows / old_seconds:,.0f} rows/s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--lines", type=int, default=200_000)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp:
        tsv, jsonl = Path(tmp) / "mmbench.tsv", Path(tmp) / "questions.jsonl"
        make_tsv(tsv, args.rows)
        make_jsonl(jsonl, args.lines)
        report("MMBench-style TSV", tsv, TSV, old_tsv)
        report("JSON Lines", jsonl, JSONL, old_jsonl)


if __name__ == "__main__":
    main()
