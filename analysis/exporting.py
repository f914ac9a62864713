"""An analysis's item figures as files: CSV (for a spreadsheet: cells neutralised) and Parquet, the
same columns, one row per item in release order, read from the stored rows a chunk at a time."""

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq

from benchforge import spreadsheet

from .models import Analysis, ItemStat

COLUMNS = {
    "id": pa.string(),
    "item_id": pa.int64(),
    "task": pa.string(),
    "question": pa.string(),
    "expected": pa.string(),
    "models": pa.int64(),
    "difficulty": pa.float64(),
    "share_right": pa.float64(),
    "discrimination": pa.float64(),
    "irt_a": pa.float64(),
    "irt_b": pa.float64(),
    "ratings": pa.int64(),
    "disagreement": pa.float64(),
    "flags": pa.string(),
    "anchor": pa.bool_(),
    "left_out": pa.bool_(),
    "results": pa.string(),
}


def rows(analysis: Analysis, left_out: set[int]):
    stats = ItemStat.objects.filter(analysis=analysis).order_by("order")
    for stat in stats.iterator(chunk_size=2000):
        yield {
            "id": stat.key,
            "item_id": stat.item_id,
            "task": stat.task,
            "question": stat.question,
            "expected": stat.expected,
            "models": stat.n_models,
            "difficulty": stat.difficulty,
            "share_right": stat.share_right,
            "discrimination": stat.discrimination,
            "irt_a": stat.irt_a,
            "irt_b": stat.irt_b,
            "ratings": stat.ratings,
            "disagreement": stat.disagreement,
            "flags": ";".join(stat.flags),
            "anchor": stat.anchor,
            "left_out": stat.item_id in left_out,
            # {model: [result 0-1, what it was]}: one JSON cell, whatever the number of models
            "results": json.dumps(stat.results, ensure_ascii=False, sort_keys=True),
        }


def csv_text(analysis: Analysis, left_out: set[int]) -> str:
    out = io.StringIO()
    writer = spreadsheet.writer(out)
    writer.writerow(list(COLUMNS))
    for row in rows(analysis, left_out):
        writer.writerow(["" if row[name] is None else row[name] for name in COLUMNS])
    return out.getvalue()


def parquet_bytes(analysis: Analysis, left_out: set[int]) -> bytes:
    schema = pa.schema(list(COLUMNS.items()))
    out = io.BytesIO()
    with pq.ParquetWriter(out, schema) as writer:
        batch = []
        for row in rows(analysis, left_out):
            batch.append(row)
            if len(batch) == 5000:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                batch = []
        if batch or out.tell() == 0:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
    return out.getvalue()
