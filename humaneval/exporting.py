"""A study's ratings as files: JSON Lines and Parquet, the same rows (selectors.export_rows)."""

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq

COLUMNS = {
    "study": pa.int64(),
    "item": pa.string(),
    "model": pa.string(),
    "task": pa.string(),
    "category": pa.string(),
    "rater": pa.string(),
    "score": pa.int64(),
    "judge_score": pa.float64(),
    "vote": pa.string(),
    "judge_outcome": pa.string(),
    "reason": pa.string(),
    "time": pa.string(),
    "source": pa.string(),
    "split": pa.string(),
}


def jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")


def parquet(rows: list[dict]) -> bytes:
    """Only the columns the rows have (a pointwise study has scores, a pairwise one votes)."""
    present = [name for name in COLUMNS if any(name in row for row in rows)] or ["item"]
    schema = pa.schema([(name, COLUMNS[name]) for name in present])
    table = pa.Table.from_pylist([{name: row.get(name) for name in present} for row in rows], schema=schema)
    out = io.BytesIO()
    pq.write_table(table, out)
    return out.getvalue()
