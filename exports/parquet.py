"""The release as a Hugging Face dataset: one Parquet file per split under data/, images embedded,
column types in the file's metadata so `datasets` decodes the images; zipped with a README whose
header names the splits. `datasets.load_dataset("parquet", data_files=...)` (or the folder) loads it.

Nested fields a loader could read differently across `datasets` versions (dialogue history,
options, meta) are JSON text; lists of plain values and the images are native columns."""

import json
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from django.core.files.storage import default_storage

from harness import ZIP_TIME

STRING = {"dtype": "string", "_type": "Value"}
FEATURES = {
    "id": STRING,
    "question": STRING,
    "seed_id": STRING,
    "category": STRING,
    "subcategory": STRING,
    "task": STRING,
    "question_type": STRING,
    "history": STRING,
    "images": {"feature": {"_type": "Image"}, "_type": "Sequence"},
    "reference_answer": STRING,
    "criteria": {"feature": STRING, "_type": "Sequence"},
    "description": STRING,
    "hint": STRING,
    "choices": STRING,
    "answer": STRING,
    "split": STRING,
    "meta": STRING,
}
SCHEMA = pa.schema(
    [
        (name, pa.list_(pa.struct([("bytes", pa.binary()), ("path", pa.string())])))
        if name == "images"
        else (name, pa.list_(pa.string()))
        if name == "criteria"
        else (name, pa.string())
        for name in FEATURES
    ],
    metadata={b"huggingface": json.dumps({"info": {"features": FEATURES}}, sort_keys=True).encode()},
)


def _record(row: dict, image_bytes: Callable[[str], bytes]) -> dict:
    record = {name: row.get(name) for name in FEATURES}
    for name in ("history", "choices", "meta"):
        record[name] = json.dumps(row.get(name), ensure_ascii=False, sort_keys=True) if row.get(name) is not None else None
    record["images"] = [{"bytes": image_bytes(path), "path": path} for path in row["images"]]
    return record


# A row group is written once it holds this many image bytes or rows: what the export holds in
# memory at a time, whatever the release's size (group boundaries depend on the rows only, so
# the same release gives the same bytes).
GROUP_BYTES = 16 << 20
GROUP_ROWS = 1000


class _SplitWriter:
    """One split's Parquet file, written a row group at a time."""

    def __init__(self, path: Path):
        self.path = path
        self._writer = pq.ParquetWriter(path, SCHEMA, compression="zstd")
        self._records: list[dict] = []
        self._bytes = 0

    def add(self, record: dict) -> None:
        self._records.append(record)
        self._bytes += sum(len(image["bytes"]) for image in record["images"])
        if self._bytes >= GROUP_BYTES or len(self._records) >= GROUP_ROWS:
            self.flush()

    def flush(self) -> None:
        if self._records:
            self._writer.write_table(pa.Table.from_pylist(self._records, schema=SCHEMA))
        self._records, self._bytes = [], 0

    def close(self) -> None:
        self.flush()
        self._writer.close()


def card_header(splits: list[str]) -> str:
    files = "\n".join(f"  - split: {s}\n    path: data/{s}-00000-of-00001.parquet" for s in splits)
    return f"---\nconfigs:\n- config_name: default\n  data_files:\n{files}\n---\n"


def write_dataset_zip(release, rows: Iterable[dict], dest: Path) -> None:
    """dest: a zip of README.md and data/<split>-00000-of-00001.parquet (the public rows, in
    order). Rows are streamed and each image is read when a row needs it."""
    stored_as = dict(release.images.values_list("name", "storage_name"))

    def image_bytes(name: str) -> bytes:
        with default_storage.open(stored_as[name], "rb") as handle:
            return handle.read()

    splits = sorted(set(release.items.values_list("split", flat=True)))
    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(dest, "w") as archive:
        readme = card_header(splits) + f"\n# {release.benchmark.name} {release.version}\n\nPublic questions, images embedded.\n"
        info = zipfile.ZipInfo(f"{release.top}/README.md", date_time=ZIP_TIME)
        archive.writestr(info, readme.encode("utf-8"), compress_type=zipfile.ZIP_DEFLATED)
        writers = {split: _SplitWriter(Path(tmp) / f"{split}.parquet") for split in splits}
        try:
            for row in rows:
                writers[row["split"]].add(_record(row, image_bytes))
        finally:
            for writer in writers.values():
                writer.close()
        for split, writer in writers.items():
            info = zipfile.ZipInfo(f"{release.top}/data/{split}-00000-of-00001.parquet", date_time=ZIP_TIME)
            info.compress_type = zipfile.ZIP_STORED
            with writer.path.open("rb") as source, archive.open(info, "w", force_zip64=True) as target:
                shutil.copyfileobj(source, target, 1 << 20)
