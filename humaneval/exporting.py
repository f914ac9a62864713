"""A study's ratings as files, streamed: JSON Lines and Parquet, the same rows
(selectors.iter_export_rows) with the same columns and types (selectors.export_columns)."""

import json

import pyarrow as pa
import pyarrow.parquet as pq

TYPES = {
    "int": pa.int64(),
    "float": pa.float64(),
    "str": pa.string(),
    "bool": pa.bool_(),
    "list": pa.list_(pa.string()),
    "options": pa.list_(pa.struct([("letter", pa.string()), ("text", pa.string())])),
}
ROWS_PER_CHUNK = 2000


def schema(columns: list[tuple[str, str]]) -> pa.Schema:
    return pa.schema([(name, TYPES[kind]) for name, kind in columns])


def jsonl(rows, columns: list[tuple[str, str]]):
    """Yields the JSON Lines file a few thousand rows at a time; every row has every column."""
    names = [name for name, _ in columns]
    chunk = []
    for row in rows:
        chunk.append(json.dumps({name: row.get(name) for name in names}, ensure_ascii=False) + "\n")
        if len(chunk) >= ROWS_PER_CHUNK:
            yield "".join(chunk).encode("utf-8")
            chunk = []
    if chunk:
        yield "".join(chunk).encode("utf-8")


class _Sink:
    """A write-only file for pyarrow whose bytes are handed on as they come."""

    def __init__(self):
        self.parts, self.position, self.closed = [], 0, False

    def write(self, data) -> int:
        data = bytes(data)
        self.parts.append(data)
        self.position += len(data)
        return len(data)

    def tell(self) -> int:
        return self.position

    def flush(self):
        pass

    def close(self):
        self.closed = True

    def take(self) -> bytes:
        out, self.parts = b"".join(self.parts), []
        return out


def parquet(rows, columns: list[tuple[str, str]]):
    """Yields the Parquet file one row group (a few thousand rows) at a time."""
    names = [name for name, _ in columns]
    table_schema = schema(columns)
    sink = _Sink()
    writer = pq.ParquetWriter(sink, table_schema)
    chunk = []

    def group():
        writer.write_table(pa.Table.from_pylist(chunk, schema=table_schema))
        chunk.clear()
        return sink.take()

    for row in rows:
        chunk.append({name: row.get(name) for name in names})
        if len(chunk) >= ROWS_PER_CHUNK:
            yield group()
    if chunk:
        yield group()
    writer.close()
    yield sink.take()


def parquet_bytes(rows, columns) -> bytes:
    return b"".join(parquet(rows, columns))


def jsonl_bytes(rows, columns) -> bytes:
    return b"".join(jsonl(rows, columns))


FORMATS = {"jsonl": (jsonl, "application/x-ndjson; charset=utf-8"), "parquet": (parquet, "application/vnd.apache.parquet")}


def streamed(study, kind: str, *, split: bool, name: str):
    """The study's ratings file as a streamed response (the first rows leave before the last are read)."""
    from django.http import StreamingHttpResponse

    from . import selectors

    write, content_type = FORMATS[kind]
    columns = selectors.export_columns(study.mode, split=split)
    response = StreamingHttpResponse(write(selectors.iter_export_rows(study, split=split), columns), content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{name}.{kind}"'
    return response
