"""One reader for tabular and line files: TSV, CSV, JSON Lines and a JSON list.

Every importer of the platform and every harness command that reads such a file asks this one
module, so they all agree on what a bad file is and how it is reported:

- The bytes are decoded a line at a time, so a byte that is not UTF-8 is reported on its own line
  and column (never where some buffer happened to start).
- TSV and CSV are read exactly as pandas `read_csv(sep=...)` reads the same bytes with its default
  C parser (what VLMEvalKit and most evaluation kits read MMBench TSVs with), cell for cell:
  a cell that starts with `"` is quoted until the next lone `"` (`""` inside is one quote mark),
  and what follows that closing quote up to the delimiter is part of the cell (`"Stop" sign` is
  `Stop sign`); a `"` anywhere else is an ordinary character; `\n`, `\r\n` and a lone `\r` end
  a row outside quotes and are kept inside them; a UTF-8 BOM is dropped; empty lines and lines of
  spaces are skipped, but a line of delimiters is a row of empty cells (`Record.blank`); a row
  with fewer cells than the header is filled with empty cells (`Record.missing` names them); an
  empty column name is "Unnamed: <n>" and a repeated one gets pandas' ".1", ".2" suffixes. Where
  pandas refuses the file, so does this reader, naming the line: a quote that never closes (the
  line it opened on), a row with more cells than the header (pandas would take the first cells of
  a first such row for its index: refused too). Two deliberate differences: column names lose
  their surrounding spaces (pandas keeps " index" as a name of its own), and a cell holding a NUL
  character is a row problem (no database stores it). tests/harness/test_tabular_pandas.py compares
  every row with pandas on a corpus of edge cases.
- Problems are either the file's or a row's. A *file* problem (encoding, a missing header column,
  a quote that never closes, a row with more cells than the header, a JSON list that does not
  close, too many bad rows) raises FileProblem: nothing of the file should be kept. A *row*
  problem (a line that is not JSON, a value nested too deep, a line or a cell over its size limit,
  a NUL character) is a Record with `problem` set; the importer reports it on that line and keeps
  the others.
- Every row problem is counted (the importer's own per-row findings too, through `problem()`);
  past `Limits.max_problems` the reader stops with a FileProblem that summarises the first ones.
  A file that many rows of are wrong is most likely the wrong file or format.
- JSON nesting is bounded before `json.loads` sees the text, so no RecursionError can happen.

Pure Python (the harness ships in releases and must not import Django).
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any

TSV, CSV, JSONL, JSON = "tsv", "csv", "jsonl", "json"  # JSON: a list of objects, or JSON Lines
LINES = "lines"  # plain text, one value a line (a URL list); blank lines and '#' comments skipped
FORMATS = (TSV, CSV, JSONL, JSON, LINES)

_JSON_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},]')
MB = 1 << 20


@dataclass(frozen=True)
class Limits:
    """How much one file may ask of the reader. The defaults take real benchmarks whole: an
    MMBench TSV row carries its images as base64 (a few MB at most), an MLLM-Bench or
    AlignMMBench row is a few kB of text."""

    max_line_bytes: int = 64 * MB  # one physical line (or one CSV/TSV record across lines)
    max_field_chars: int = 64 * MB  # one cell of a TSV/CSV row
    max_depth: int = 64  # nesting of a JSON value ([[[...]]])
    max_problems: int = 200  # row problems before the whole file is refused
    max_document_bytes: int = 256 * MB  # a JSON list is read whole


class FileProblem(ValueError):
    """The file as a whole cannot be used; nothing of it should be stored."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.line = line


@dataclass
class Record:
    """One row: its first line, and its value (a dict for JSON and for TSV/CSV with a header, a
    list of fields without one), or None with `problem` saying why it cannot be read."""

    line: int
    value: Any = None
    problem: str = ""
    element: int | None = None  # its position in a JSON list (several may share a line)
    missing: tuple[str, ...] = ()  # TSV/CSV: header columns the row has no cell for (read as empty)
    blank: bool = False  # TSV/CSV: every cell empty or spaces (pandas reads such a row as NaN)

    @property
    def where(self) -> str:
        """ "line 7", or "line 1, element 3" in a JSON list: unique within the file."""
        return f"line {self.line}" if self.element is None else f"line {self.line}, element {self.element}"


def size_text(n: int) -> str:
    if n >= MB:
        return f"{n / MB:.1f} MB"
    if n >= 1024:
        return f"{n / 1024:.0f} kB"
    return f"{n} bytes"


def json_depth_exceeds(text: str, limit: int) -> bool:
    """True when brackets outside strings nest deeper than `limit` (checked before parsing)."""
    if text.count("[") + text.count("{") <= limit:  # cannot nest deeper: no scan (most lines)
        return False
    depth = 0
    for match in _JSON_TOKENS.finditer(text):
        char = match.group()
        if char in "[{":
            depth += 1
            if depth > limit:
                return True
        elif char in "]}":
            depth -= 1
    return False


def _has_nul(value) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


def loads_bounded(text: str, *, max_depth: int = Limits.max_depth) -> Any:
    """json.loads for text from outside: ValueError (with a reason a person can act on) for
    invalid JSON, nesting deeper than `max_depth`, or a NUL character (no database stores it)."""
    if json_depth_exceeds(text, max_depth):
        raise ValueError(f"it is nested more than {max_depth} levels deep")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    except (ValueError, RecursionError) as exc:  # an integer of thousands of digits, say
        raise ValueError(f"not valid JSON ({str(exc)[:120]})") from None
    if "\\u0000" in text and _has_nul(value):  # a NUL can only come from its escape (json refuses a raw one)
        raise ValueError("a text contains a NUL character (\\u0000), which cannot be stored")
    return value


class TableReader:
    """Read `stream` (binary) as `format`; iterate for Records. `name` names the file in messages.

    TSV/CSV with `header=True`: the first non-blank record is the header (`required` columns must
    be in it, `fold_header` lower-cases the names) and rows are dicts by column. `objects=True`:
    a JSON row that is not an object is a row problem."""

    def __init__(
        self,
        stream: IO[bytes],
        *,
        name: str,
        format: str,
        limits: Limits = Limits(),
        header: bool = True,
        required: Iterable[str] = (),
        fold_header: bool = False,
        objects: bool = True,
    ):
        if format not in FORMATS:
            raise ValueError(f"unknown format {format!r}")
        self.stream, self.name, self.format, self.limits = stream, name, format, limits
        self.use_header, self.required, self.fold_header, self.objects = header, tuple(required), fold_header, objects
        self.header: list[str] | None = None
        self.problems: list[tuple[str, str]] = []
        self.problem_count = 0
        self.rows = 0
        self.header_line = 0

    # ---- problems

    def problem(self, at: Record | int, message: str) -> str:
        """Count a row problem (the reader's or the importer's) of a record (or a line number);
        returns "line N: message". Raises FileProblem once there are more than `max_problems`."""
        where = at.where if isinstance(at, Record) else f"line {at}"
        line = at.line if isinstance(at, Record) else at
        self.problem_count += 1
        if len(self.problems) < 5:
            self.problems.append((where, message))
        if self.problem_count > self.limits.max_problems:
            raise FileProblem(
                f"{self.name}: stopped at line {line}: more than {self.limits.max_problems} rows have problems, "
                f"so this is most likely not a {self._format_name()} file of the expected kind ({self.summary()}). "
                "Nothing was imported; fix the file and import it again.",
                line=line,
            )
        return f"line {line}: {message}"

    def summary(self) -> str:
        """The problems counted so far, the first few quoted."""
        if not self.problem_count:
            return "no problems"
        shown = "; ".join(f"{where}: {m}" for where, m in self.problems)
        more = self.problem_count - len(self.problems)
        return f"{self.problem_count} problem(s): {shown}" + (f"; and {more} more" if more > 0 else "")

    def refuse_if_problems(self) -> None:
        """For all-or-nothing files: one FileProblem listing the problems, if there were any."""
        if self.problem_count:
            raise FileProblem(f"{self.name} was not imported: {self.summary()}.")

    def _format_name(self) -> str:
        return {TSV: "TSV", CSV: "CSV", JSONL: "JSON Lines", JSON: "JSON", LINES: "text"}[self.format]

    # ---- reading

    def __iter__(self) -> Iterator[Record]:
        if self.format in (TSV, CSV):
            records = self._tabular()
        elif self.format == LINES:
            records = self._text_lines()
        elif self.format == JSONL or self._peek_first() != b"[":
            records = self._json_lines()
        else:
            records = self._json_list()
        for record in records:
            if record.problem:
                self.problem(record, record.problem)
            else:
                self.rows += 1
            yield record

    def _peek_first(self) -> bytes:
        """The first byte that is not whitespace (or a BOM); the stream is rewound."""
        start = self.stream.tell()
        head = self.stream.read(4096)
        self.stream.seek(start)
        head = head.removeprefix(codecs.BOM_UTF8).lstrip()
        return head[:1]

    def _lines(self) -> Iterator[tuple[int, str | None, str]]:
        """(line number, decoded text or None, problem) for each physical line."""
        limit = self.limits.max_line_bytes
        number = 0
        while True:
            raw = self.stream.readline(limit + 1)
            if not raw:
                return
            number += 1
            if len(raw) > limit and not raw.endswith(b"\n"):
                size = len(raw)
                while True:  # skip the rest of the line, a piece at a time
                    more = self.stream.readline(MB)
                    size += len(more)
                    if not more or more.endswith(b"\n"):
                        break
                yield number, None, f"the line is {size_text(size)}; a line may be at most {size_text(limit)}"
                continue
            if number == 1:
                raw = raw.removeprefix(codecs.BOM_UTF8)
            yield number, self._decode(raw, number), ""

    def _decode(self, raw: bytes, number: int) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            column = len(raw[: exc.start].decode("utf-8", errors="replace")) + 1
            raise FileProblem(
                f"{self.name}: line {number} is not UTF-8 text (byte 0x{raw[exc.start]:02x} at column {column}). "
                "Nothing was imported; save the file as UTF-8 and import it again.",
                line=number,
            ) from None

    # ---- TSV / CSV

    def _tabular(self) -> Iterator[Record]:
        for line, fields, problem in self._records("\t" if self.format == TSV else ","):
            if problem:
                yield Record(line, problem=problem)
                continue
            record = self._row(line, fields)
            if record is not None:
                yield record

    def _records(self, delimiter: str) -> Iterator[tuple[int, list[str], str]]:
        """(first line, cells, "") for each row, or (line, [], problem) for a line over its size
        limit: pandas' C tokenizer with its defaults (quotechar '"', doubled quotes, no escape
        character, blank lines skipped), a physical line at a time. A line without a quote or a
        carriage return is split as it is (what the tokenizer makes of it, without reading a large
        cell, e.g. an image's base64, character by character)."""
        blank = " \t".replace(delimiter, "")  # what pandas takes for a line of whitespace
        fields: list[str] = []
        piece: list[str] = []
        started = quoted = False  # inside a row; inside a quoted cell
        at_start = True  # at the first character of a cell (where a quote opens one)
        row_line = quote_line = row_bytes = 0
        limit = self.limits.max_line_bytes
        for number, text, problem in self._lines():
            if text is None:
                if quoted:
                    raise self._unclosed(quote_line, f"runs on past line {number} and {size_text(limit)}")
                yield number, [], problem
                continue
            if quoted:
                row_bytes += len(text)
                if row_bytes > limit:
                    raise self._unclosed(quote_line, f"runs on past line {number} and {size_text(limit)}")
            elif '"' not in text and "\r" not in text:
                body = text[:-1] if text.endswith("\n") else text
                if body.strip(blank):
                    yield number, body.split(delimiter), ""
                continue
            i, n = 0, len(text)
            while i < n:
                if quoted:
                    j = text.find('"', i)
                    if j < 0:
                        piece.append(text[i:])  # the cell goes on, line break included, on the next line
                        break
                    piece.append(text[i:j])
                    if j + 1 < n and text[j + 1] == '"':
                        piece.append('"')
                        i = j + 2
                    else:
                        quoted, i = False, j + 1  # what follows, up to the delimiter, joins the cell
                    continue
                if not started:
                    skip_to = self._past_blank(text, i, number, delimiter, blank)
                    if skip_to is not None:
                        i = skip_to
                        continue
                    started, at_start, row_line = True, True, number
                if at_start and text[i] == '"':
                    quoted, at_start, quote_line, row_bytes = True, False, number, len(text)
                    i += 1
                    continue
                j = _next_stop(text, i, delimiter)
                piece.append(text[i:j])
                if j == n:  # the last line, without a line break
                    break
                fields.append("".join(piece))
                piece = []
                if text[j] == delimiter:
                    at_start, i = True, j + 1
                    continue
                yield row_line, fields, ""
                fields, started = [], False
                i = j + 2 if text.startswith("\r\n", j) else j + 1
        if quoted:
            raise self._unclosed(quote_line, "never closes")
        if started:
            fields.append("".join(piece))
            yield row_line, fields, ""

    def _past_blank(self, text: str, i: int, number: int, delimiter: str, blank: str) -> int | None:
        """Between rows, at text[i]: where to go on from past a blank line or a line of spaces
        (both skipped, as pandas does), or None when a row starts here."""
        n = len(text)
        if text[i] in "\r\n":  # a blank line (\r\n, \n or a lone \r)
            lone_cr = text[i] == "\r" and not text.startswith("\r\n", i)
            i += 1 if text[i] == "\n" or lone_cr else 2
            if lone_cr:
                if i < n and text[i] == delimiter:
                    i += 1  # pandas' tokenizer drops a delimiter right after a blank line ended by a lone \r
                k = i
                while k < n and text[k] in blank:
                    k += 1
                if i < k < n and text[k] not in "\r\n":
                    raise FileProblem(
                        f"{self.name}: line {number} has an empty line ended by a lone carriage return (\\r) "
                        "and then a row starting with spaces, which pandas reads by going back over that "
                        "line break (its cells would shift). Save the file with \\n or \\r\\n line ends. "
                        "Nothing was imported.",
                        line=number,
                    )
            return i
        k = i
        while k < n and text[k] in blank:
            k += 1
        if k == n or text[k] in "\r\n":  # a line of spaces: skipped too
            return k
        return None

    def _unclosed(self, line: int, how: str) -> FileProblem:
        return FileProblem(
            f"{self.name}: the quoted cell that opens on line {line} {how}: a cell starting with a quote "
            'mark (") runs until the next one, so every line after it would be read into that cell (pandas, '
            "and the evaluation kits that read this format with it, refuse such a file). Quote the whole cell "
            'and double the quote marks inside it ("""Stop"" sign"), or remove the stray quote. Nothing was imported.',
            line=line,
        )

    def _row(self, line: int, fields: list[str]) -> Record | None:
        if self.use_header and self.header is None:
            self._set_header(line, fields)
            return None
        too_big = next((n for n, f in enumerate(fields) if len(f) > self.limits.max_field_chars), None)
        if too_big is not None:
            column = self.header[too_big] if self.header and too_big < len(self.header) else f"column {too_big + 1}"
            return Record(
                line,
                problem=f"'{column}' is {size_text(len(fields[too_big]))}; a cell may be at most "
                f"{size_text(self.limits.max_field_chars)}",
            )
        if any("\x00" in f for f in fields):
            return Record(line, problem="the row contains a NUL character, which cannot be stored")
        blank = not any(f.strip() for f in fields)
        if not self.use_header:
            return Record(line, fields, blank=blank)
        if len(fields) > len(self.header):
            separator = "tab" if self.format == TSV else "comma"
            raise FileProblem(
                f"{self.name}: line {line} has {len(fields)} cells but the header (line {self.header_line}) names "
                f"{len(self.header)} columns: a {separator} inside a cell that is not quoted, or a row with a cell too "
                "many? pandas refuses such a file (or, on the first row, takes its first cells for a row index and "
                "shifts every column). Nothing was imported.",
                line=line,
            )
        missing = tuple(self.header[len(fields) :])
        return Record(line, dict(zip(self.header, [*fields, *[""] * len(missing)])), missing=missing, blank=blank)

    def _set_header(self, line: int, fields: list[str]) -> None:
        names = [f.strip() for f in fields]
        if self.fold_header:
            names = [n.lower() for n in names]
        names = _column_names(names)
        missing = [c for c in self.required if c not in names]
        if missing:
            raise FileProblem(
                f"{self.name}: the header (line {line}) lacks the column(s) {', '.join(missing)}. Nothing was imported.",
                line=line,
            )
        self.header, self.header_line = names, line

    # ---- plain lines

    def _text_lines(self) -> Iterator[Record]:
        for number, text, problem in self._lines():
            if text is None:
                yield Record(number, problem=problem)
                continue
            text = text.strip()
            if not text or text.startswith("#"):
                continue
            if "\x00" in text:
                yield Record(number, problem="the line contains a NUL character, which cannot be stored")
            else:
                yield Record(number, text)

    # ---- JSON

    def _value(self, line: int, text: str) -> Record:
        try:
            value = loads_bounded(text, max_depth=self.limits.max_depth)
        except ValueError as exc:
            return Record(line, problem=str(exc))
        if self.objects and not isinstance(value, dict):
            return Record(line, problem=f"expected a JSON object, not {_json_kind(value)}")
        return Record(line, value)

    def _json_lines(self) -> Iterator[Record]:
        for number, text, problem in self._lines():
            if text is None:
                yield Record(number, problem=problem)
            elif text.strip():
                yield self._value(number, text)

    def _json_list(self) -> Iterator[Record]:
        limit = self.limits.max_document_bytes
        data = self.stream.read(limit + 1)
        if len(data) > limit:
            raise FileProblem(
                f"{self.name}: a JSON list is read whole and may be at most {size_text(limit)}; "
                "give such a file as JSON Lines (one object a line). Nothing was imported."
            )
        data = data.removeprefix(codecs.BOM_UTF8)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line_start = data.rfind(b"\n", 0, exc.start) + 1
            line_end = data.find(b"\n", exc.start)
            self._decode(data[line_start : line_end if line_end >= 0 else len(data)], data.count(b"\n", 0, exc.start) + 1)
            raise FileProblem(f"{self.name} is not UTF-8 text. Nothing was imported.") from None  # pragma: no cover
        yield from self._list_elements(text)

    def _list_elements(self, text: str) -> Iterator[Record]:
        """Split the list into its elements by the brackets and commas outside strings, so each
        element is parsed (and bounded) on its own and reported on the line it starts."""
        depth, start, deepest, line, counted, count = 0, None, 0, 1, 0, 0

        def line_of(position: int) -> int:
            nonlocal line, counted
            line += text.count("\n", counted, position)
            counted = position
            return line

        def element(begin: int, end: int) -> Record | None:
            nonlocal count
            body = text[begin:end]
            if not body.strip():
                return None
            first = begin + len(body) - len(body.lstrip())
            count += 1
            if deepest - 1 > self.limits.max_depth:
                record = Record(line_of(first), problem=f"it is nested more than {self.limits.max_depth} levels deep")
            else:
                record = self._value(line_of(first), body)
            record.element = count
            return record

        for match in _JSON_TOKENS.finditer(text):
            char = match.group()
            if char[0] == '"':
                continue
            if depth == 0:
                if start is not None or char != "[":
                    raise FileProblem(
                        f"{self.name}: line {line_of(match.start())}: text after the end of the JSON list. Nothing was imported.",
                        line=line,
                    )
                depth, start, deepest = 1, match.end(), 1
                continue
            if char in "[{":
                depth += 1
                deepest = max(deepest, depth)
            elif char in "]}":
                depth -= 1
                if depth == 0:
                    record = element(start, match.start())
                    if record is not None:
                        yield record
                    start = -1  # the list is closed
            elif depth == 1:  # a comma between elements
                record = element(start, match.start())
                if record is None:
                    raise FileProblem(f"{self.name}: line {line_of(match.start())}: an empty element in the JSON list.")
                yield record
                start, deepest = match.end(), 1
        if depth != 0 or start is None:
            raise FileProblem(
                f"{self.name}: the JSON list does not close (a missing ']' or '}}', or a string left open). Nothing was imported."
            )


def _next_stop(text: str, start: int, delimiter: str) -> int:
    """Where the unquoted run from `start` ends: the next delimiter or line break (len(text) if none)."""
    stops = [at for at in (text.find(delimiter, start), text.find("\r", start), text.find("\n", start)) if at >= 0]
    return min(stops, default=len(text))


def _column_names(names: list[str]) -> list[str]:
    """Column names as pandas makes them: an empty one is "Unnamed: <position>", a repeated one
    gets ".1", ".2"... (skipping a suffix another column already has)."""
    names = [name or f"Unnamed: {i}" for i, name in enumerate(names)]
    counts: dict[str, int] = {}
    for i, name in enumerate(names):
        count = counts.get(name, 0)
        renamed = name
        while count > 0:
            counts[name] = count + 1
            renamed = f"{name}.{count}"
            count = count + 1 if renamed in names else counts.get(renamed, 0)
        names[i] = renamed
        counts[renamed] = count + 1
    return names


def _json_kind(value) -> str:
    return {list: "a list", str: "a text", bool: "true/false", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, int | float) else type(value).__name__
    )


def format_for(name: str, default: str = CSV) -> str:
    """The format a file's name says: .tsv, .csv, .jsonl/.ndjson, .json (a list or JSON Lines), .txt."""
    suffix = name.lower().rsplit(".", 1)[-1] if "." in name else ""
    return {"tsv": TSV, "csv": CSV, "jsonl": JSONL, "ndjson": JSONL, "json": JSON, "txt": LINES}.get(suffix, default)


__all__ = [
    "CSV",
    "FORMATS",
    "JSON",
    "JSONL",
    "LINES",
    "TSV",
    "FileProblem",
    "Limits",
    "Record",
    "TableReader",
    "format_for",
    "json_depth_exceeds",
    "loads_bounded",
    "size_text",
]
