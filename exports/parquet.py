"""The release as a Hugging Face dataset: one Parquet file per split under data/, images embedded,
column types in the file's metadata so `datasets` decodes the images; zipped with a README whose
header names the splits. `datasets.load_dataset("parquet", data_files=...)` (or the folder) loads it.

Nested fields a loader could read differently across `datasets` versions (dialogue history,
options, meta) are JSON text; lists of plain values and the images are native columns."""

import json
import tempfile
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from django.core.files.storage import default_storage

from harness.bundle import ZIP_TIME

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


def _record(row: dict, images: dict[str, bytes]) -> dict:
    record = {name: row.get(name) for name in FEATURES}
    for name in ("history", "choices", "meta"):
        record[name] = json.dumps(row.get(name), ensure_ascii=False, sort_keys=True) if row.get(name) is not None else None
    record["images"] = [{"bytes": images[path], "path": path} for path in row["images"]]
    return record


def write_split(path: Path, rows: list[dict], images: dict[str, bytes]) -> None:
    table = pa.Table.from_pylist([_record(r, images) for r in rows], schema=SCHEMA)
    pq.write_table(table, path, compression="zstd")


def card_header(splits: list[str]) -> str:
    files = "\n".join(f"  - split: {s}\n    path: data/{s}-00000-of-00001.parquet" for s in splits)
    return f"---\nconfigs:\n- config_name: default\n  data_files:\n{files}\n---\n"


def write_dataset_zip(release, rows: list[dict], dest: Path) -> None:
    """dest: a zip of README.md and data/<split>-00000-of-00001.parquet (the public rows)."""
    images = {}
    for image in release.images.order_by("name"):
        with default_storage.open(image.storage_name, "rb") as handle:
            images[image.name] = handle.read()
    splits = sorted({r["split"] for r in rows})
    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(dest, "w") as archive:
        readme = card_header(splits) + f"\n# {release.benchmark.name} {release.version}\n\nPublic questions, images embedded.\n"
        info = zipfile.ZipInfo(f"{release.top}/README.md", date_time=ZIP_TIME)
        archive.writestr(info, readme.encode("utf-8"), compress_type=zipfile.ZIP_DEFLATED)
        for split in splits:
            path = Path(tmp) / f"{split}.parquet"
            write_split(path, [r for r in rows if r["split"] == split], images)
            info = zipfile.ZipInfo(f"{release.top}/data/{split}-00000-of-00001.parquet", date_time=ZIP_TIME)
            archive.writestr(info, path.read_bytes(), compress_type=zipfile.ZIP_STORED)
