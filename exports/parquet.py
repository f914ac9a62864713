"""The release as a Hugging Face dataset: one Parquet file per split under data/, images embedded
(each with its licence and source in two columns), column types in the file's metadata so
`datasets` decodes the images; zipped with a README that is this export's dataset card: its header
names the licence, the splits and every column's feature (dataset_info), its body what the export
holds and how to load and score it. `datasets.load_dataset("parquet", data_files=...)` (or the
folder) loads it.

Nested fields a loader could read differently across `datasets` versions (dialogue history,
options, meta) are JSON text; lists of plain values and the images are native columns."""

import json
import re
import shutil
import tempfile
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from django.core.files.storage import default_storage

from benchforge_harness import ZIP_TIME

from . import card

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
    # Each image's licence and source, in the order of `images` (a release keeps both per image).
    "image_licenses": {"feature": STRING, "_type": "Sequence"},
    "image_sources": {"feature": STRING, "_type": "Sequence"},
    "reference_answer": STRING,
    "criteria": {"feature": STRING, "_type": "Sequence"},
    "description": STRING,
    "hint": STRING,
    "choices": STRING,
    "answer": STRING,
    "split": STRING,
    "meta": STRING,
}
LIST_COLUMNS = ("criteria", "image_licenses", "image_sources")
# The features as the card's dataset_info declares them (datasets' YAML: `list:` for a list).
YAML_FEATURES = [
    {"name": name, "list": "image"}
    if name == "images"
    else {"name": name, "list": "string"}
    if name in LIST_COLUMNS
    else {"name": name, "dtype": "string"}
    for name in FEATURES
]
SCHEMA = pa.schema(
    [
        (name, pa.list_(pa.struct([("bytes", pa.binary()), ("path", pa.string())])))
        if name == "images"
        else (name, pa.list_(pa.string()))
        if name in LIST_COLUMNS
        else (name, pa.string())
        for name in FEATURES
    ],
    metadata={b"huggingface": json.dumps({"info": {"features": FEATURES}}, sort_keys=True).encode()},
)


def _record(row: dict, image_bytes: Callable[[str], bytes], image_origin: Callable[[str], tuple[str, str]]) -> dict:
    record = {name: row.get(name) for name in FEATURES}
    for name in ("history", "choices", "meta"):
        record[name] = json.dumps(row.get(name), ensure_ascii=False, sort_keys=True) if row.get(name) is not None else None
    record["images"] = [{"bytes": image_bytes(path), "path": path} for path in row["images"]]
    record["image_licenses"] = [image_origin(path)[0] for path in row["images"]]
    record["image_sources"] = [image_origin(path)[1] for path in row["images"]]
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
        self.table_bytes = 0  # the split's size as Arrow holds it in memory (dataset_info's num_bytes)

    def add(self, record: dict) -> None:
        self._records.append(record)
        self._bytes += sum(len(image["bytes"]) for image in record["images"])
        if self._bytes >= GROUP_BYTES or len(self._records) >= GROUP_ROWS:
            self.flush()

    def flush(self) -> None:
        if self._records:
            table = pa.Table.from_pylist(self._records, schema=SCHEMA)
            self.table_bytes += table.nbytes
            self._writer.write_table(table)
        self._records, self._bytes = [], 0

    def close(self) -> None:
        self.flush()
        self._writer.close()


# The Hub's licence identifiers for the licences a release is likely to name; any other licence
# is declared as "other" with its own name (the Hub's way), never guessed.
HUB_LICENSES = {
    *(f"cc-{kind}-{v}" for kind in ("by", "by-sa", "by-nc", "by-nd", "by-nc-sa", "by-nc-nd") for v in ("2.0", "3.0", "4.0")),
    *("cc0-1.0", "mit", "apache-2.0", "bsd-2-clause", "bsd-3-clause", "odc-by", "odbl", "pddl", "cdla-permissive-2.0"),
    *("cdla-sharing-1.0", "gpl-3.0", "lgpl-3.0", "agpl-3.0", "unlicense", "openrail"),
}
SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"))
# The writing system of a question names its language on the card: Latin script is taken for
# English (the language of the benchmarks this platform builds from Latin text).
SCRIPTS = (
    ("ja", re.compile(r"[\u3040-\u30ff]")),  # kana first: Japanese text also holds Han characters
    ("ko", re.compile(r"[\uac00-\ud7af]")),
    ("zh", re.compile(r"[\u4e00-\u9fff]")),
    ("en", re.compile(r"[A-Za-z]")),
)
# A language is declared when at least this share of the questions is written in it.
LANGUAGE_SHARE = 0.1


def hub_license(text: str) -> dict:
    """A release's licence as the Hub's card fields: {"license": id} or "other" with its name."""
    slug = re.sub(r"[\s_]+", "-", text.strip().lower()).removesuffix("-license").removeprefix("license-")
    slug = {"cc0": "cc0-1.0", "apache-2": "apache-2.0", "cc-zero": "cc0-1.0"}.get(slug, slug)
    if slug in HUB_LICENSES:
        return {"license": slug}
    return {"license": "other", "license_name": re.sub(r"[^a-z0-9.]+", "-", slug).strip("-") or "unspecified"}


def question_language(text: str) -> str | None:
    for language, script in SCRIPTS:
        if script.search(text or ""):
            return language
    return None


def size_category(n: int) -> str:
    return next((label for limit, label in SIZE_CATEGORIES if n < limit), "n>1M")


def card_header(
    release, splits: dict[str, int], languages: Counter, n_rows: int, multiple_choice: bool, sizes: dict[str, int] | None = None
) -> str:
    """The card's YAML front matter: what the Hub's dataset page shows (licence, languages, task
    categories, size, name), the configs `datasets` reads the splits from, and `dataset_info`: the
    features of every column, and the rows and Arrow bytes of each split (splits: {split: rows},
    sizes: {split: bytes})."""
    sizes = sizes or {}
    total = sum(languages.values()) or 1
    declared = sorted(lang for lang, n in languages.items() if n / total >= LANGUAGE_SHARE)
    lines = [f"{key}: {json.dumps(value)}" for key, value in hub_license(release.license).items()]
    lines += ["language:", *(f"- {lang}" for lang in declared)] if declared else []
    tasks = ["visual-question-answering", *(["multiple-choice"] if multiple_choice else [])]
    lines += ["task_categories:", *(f"- {t}" for t in tasks)]
    lines += ["size_categories:", f"- {json.dumps(size_category(n_rows))}"]
    lines += [f"pretty_name: {json.dumps(f'{release.benchmark.name} {release.version}', ensure_ascii=False)}"]
    lines += ["dataset_info:", "  features:"]
    for feature in YAML_FEATURES:
        name, (kind, value) = feature["name"], next((k, v) for k, v in feature.items() if k != "name")
        lines += [f"  - name: {name}", f"    {kind}: {value}"]
    lines += ["  splits:"]
    lines += [f"  - name: {s}\n    num_bytes: {sizes.get(s, 0)}\n    num_examples: {n}" for s, n in splits.items()]
    lines += [f"  dataset_size: {sum(sizes.get(s, 0) for s in splits)}"]
    files = "\n".join(f"  - split: {s}\n    path: data/{s}-00000-of-00001.parquet" for s in splits)
    return "---\n" + "\n".join(lines) + f"\nconfigs:\n- config_name: default\n  data_files:\n{files}\n---\n"


def write_dataset_zip(release, rows: Iterable[dict], dest: Path) -> None:
    """dest: a zip of README.md and data/<split>-00000-of-00001.parquet (the public rows, in
    order). Rows are streamed and each image is read when a row needs it."""
    stored_as, origin = {}, {}
    for name, storage_name, license, source in release.images.values_list("name", "storage_name", "license", "source"):
        stored_as[name], origin[name] = storage_name, (license or "", source or "")

    def image_bytes(name: str) -> bytes:
        with default_storage.open(stored_as[name], "rb") as handle:
            return handle.read()

    splits = sorted(set(release.items.values_list("split", flat=True)))
    per_split: Counter = Counter()
    languages: Counter = Counter()
    n_rows, multiple_choice = 0, False
    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(dest, "w") as archive:
        writers = {split: _SplitWriter(Path(tmp) / f"{split}.parquet") for split in splits}
        try:
            for row in rows:
                writers[row["split"]].add(_record(row, image_bytes, origin.__getitem__))
                per_split[row["split"]] += 1
                languages[question_language(row["question"])] += 1
                n_rows, multiple_choice = n_rows + 1, multiple_choice or bool(row["choices"])
        finally:
            for writer in writers.values():
                writer.close()
        languages.pop(None, None)
        counts = {split: per_split[split] for split in splits}
        sizes = {split: writer.table_bytes for split, writer in writers.items()}
        # The Hub's page: its metadata, then the card of this export (not the bundle's: none of its files are here).
        readme = card_header(release, counts, languages, n_rows, multiple_choice, sizes) + "\n" + card.hub_card(release, counts)
        for name, text in (
            ("README.md", readme),
            ("charts/items_per_task.svg", card.task_chart(release.counts, release.taxonomy)),
        ):
            info = zipfile.ZipInfo(f"{release.top}/{name}", date_time=ZIP_TIME)
            archive.writestr(info, text.encode("utf-8"), compress_type=zipfile.ZIP_DEFLATED)
        for split, writer in writers.items():
            info = zipfile.ZipInfo(f"{release.top}/data/{split}-00000-of-00001.parquet", date_time=ZIP_TIME)
            info.compress_type = zipfile.ZIP_STORED
            with writer.path.open("rb") as source, archive.open(info, "w", force_zip64=True) as target:
                shutil.copyfileobj(source, target, 1 << 20)
