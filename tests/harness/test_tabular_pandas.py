"""The one tabular reader reads TSV and CSV exactly as pandas `read_csv(sep=...)` reads the same
bytes (what VLMEvalKit reads MMBench TSVs with), or refuses the file where pandas does, naming the
line a quote opened on: a differential test over a corpus of edge cases, every row compared.

The corpus: the hand-written cases below (quotes that never close early, mid-file and on the last
line; balanced quotes at the start of a cell; quotes inside cells; CRLF, lone CR; tabs and line
breaks inside quoted cells; a BOM; empty lines, lines of spaces, lines of delimiters; short rows;
empty and repeated column names) in TSV and CSV, and random files built from the same pieces.
Where the reader refuses what pandas reads (the only such cases): a first row with more cells
than the header (pandas silently takes its first cells for a row index, shifting every column),
and a NUL character in a cell (a row problem: no database stores it). Column names are compared
without their surrounding spaces (the reader drops them; pandas keeps them)."""

import base64
import io
import random

import pandas as pd  # a dependency of `datasets`, in the test extra
import pytest

from benchforge_harness.tabular import CSV, TSV, FileProblem, Limits, TableReader

CASES = {
    "short row": b"a\tb\tc\n1\t2\n",
    "long later row": b"a\tb\n1\t2\n4\t5\t6\n",
    "trailing delimiter in the header": b"a\tb\t\n1\t2\t3\n",
    "repeated column names": b"a\ta\ta.1\ta\n1\t2\t3\t4\n",
    "empty column name": b"a\t\tc\n1\t2\t3\n",
    "only delimiters in the header": b"\t\n1\t2\n",
    "empty lines": b"a\tb\n\n1\t2\n\n\n3\t4\n",
    "a line of spaces": b"a\tb\n   \n1\t2\n",
    "a line of delimiters": b"a\tb\n\t\n1\t2\n",
    "spaces around a delimiter": b"a\tb\n  \t  \n1\t2\n",
    "lone CR line ends": b"a\tb\r1\t2\r3\t4\r",
    "CR inside an unquoted cell": b"a\tb\nx\ry\t1\n",
    "CR CR": b"a\tb\r\r1\t2\r\n",
    "CRLF": b"a\tb\r\n1\t2\r\n3\t4\r\n",
    "balanced leading quote": b'a\tb\n"Stop" sign: what does it mean?\t2\n',
    "quote inside a cell": b'a\tb\nsay "hi"\t2\n',
    "text after a closing quote": b'a\tb\n"a"b"c\t2\n',
    "doubled quotes at the start": b'a\tb\n""x""\t2\n',
    "backslash before a quote": b'a\tb\n"x\\"y"\t2\n',
    "space after a closing quote": b'a\tb\n"x" \t2\n',
    "quoted empty cell alone": b'a\tb\n""\n1\t2\n',
    "quoted empties": b'a\tb\n""\t""\n',
    "quoted tab and newline": b'a\tb\n"x\ty\nz"\t2\n3\t4\n',
    "quoted CRLF": b'a\tb\r\n"x\r\ny"\t2\r\n',
    "quoted doubled quotes": b'a\tb\n"He said ""no"""\t2\n',
    "quoted header": b'"a\tb"\tc\n1\t2\n',
    "BOM": b"\xef\xbb\xbfa\tb\n1\t2\n",
    "BOM then a quoted name": b'\xef\xbb\xbf"a"\tb\n1\t2\n',
    "only the header": b"a\tb\n",
    "empty file": b"",
    "blank lines only": b"\n\n  \n",
    "spaces before the header": b"  \na\tb\n1\t2\n",
    "no line break at the end": b"a\tb\n1\t2",
    "quoted last cell without a line break": b'a\tb\n1\t"x"',
    "header with spaces": b" a \tb \n1\t2\n",
    "unclosed quote on the first row": b'a\tb\n"open\t1\n2\t3\n',
    "unclosed quote mid-file": b'a\tb\n1\t2\n3\t"open\n4\t5\n6\t7\n',
    "unclosed quote on the last line": b'a\tb\n1\t2\n3\t"x\n',
    "unclosed quote at the very end": b'a\tb\n1\t2\n3\t"x',
    "quote closed lines later": b'a\tb\n"one\n\ntwo"\t2\n3\t4\n',
    "a delimiter after an empty line ended by a lone CR": b"a\tb\n\r\t1\n2\t3\n",
    "a lone CR ending a row, then a delimiter": b"a\tb\r\t1\n",
}
# The same cases as CSV: commas where the tabs were (and a comma inside a quoted cell).
CSV_CASES = {name: data.replace(b",", b";").replace(b"\t", b",") for name, data in CASES.items()}
CSV_CASES["comma inside quotes"] = b'a,b\n"1,5",2\n'


def pandas_read(data: bytes, sep: str):
    """(column names, rows of cell texts) as pandas reads them, or None when pandas refuses the file."""
    try:
        frame = pd.read_csv(io.BytesIO(data), sep=sep, dtype=str, keep_default_na=False, na_filter=False)
    except pd.errors.EmptyDataError:
        return [], []
    except pd.errors.ParserError:
        return None
    if not isinstance(frame.index, pd.RangeIndex):
        return "index"  # the first row had more cells than the header: pandas took some for an index
    return [str(c).strip() for c in frame.columns], frame.values.tolist()


def reader_read(data: bytes, fmt: str):
    reader = TableReader(io.BytesIO(data), name="f", format=fmt, limits=Limits(max_problems=10**6))
    try:
        rows = [list(record.value.values()) for record in reader]
    except FileProblem as exc:
        return None, exc
    return (reader.header or [], rows), None


def check(data: bytes, fmt: str) -> str:
    """Compare one file; returns how it came out ("read" or "refused")."""
    expected = pandas_read(data, "\t" if fmt == TSV else ",")
    got, refused = reader_read(data, fmt)
    if refused is not None and "lone carriage return" in refused.message:
        return "refused (a lone CR before spaces)"
    if expected == "index":
        assert refused is not None and "cells but the header" in refused.message, data
        return "refused (pandas: an index)"
    if expected is None:
        assert refused is not None, (data, got)
        return "refused"
    assert refused is None, (data, refused.message)
    assert got == tuple(expected), (data, got, expected)
    return "read"


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("fmt", [TSV, CSV])
def test_each_edge_case_reads_as_pandas_reads_it(name, fmt):
    data = (CASES if fmt == TSV else CSV_CASES)[name]
    check(data, fmt)


def test_random_files_read_as_pandas_reads_them_or_are_refused_where_pandas_refuses_them():
    pieces = ["", " ", "x", "a b", '"', '""', '"q"', 'say "hi"', '"Stop" sign', "\t", ",", "\n", "\r", "\r\n", "é中", "'s'"]
    rng = random.Random(39)
    outcomes: dict[str, int] = {}
    files = 0
    for n in range(3000):
        fmt = TSV if n % 2 else CSV
        delimiter = "\t" if fmt == TSV else ","
        # Header names without spaces (the reader drops them; pandas keeps them), repeated or empty too.
        names = ["index"] + [rng.choice(["question", "A", "", "A", "index"]) for _ in range(rng.randint(0, 3))]
        lines = [delimiter.join(names)]
        tidy = n % 3 != 0  # two files in three quote their cells properly; the rest are chaos
        for _ in range(rng.randint(0, 8)):
            cells = []
            for _ in range(rng.randint(1, 4)):
                cell = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 3)))
                if tidy and any(c in cell for c in f'"\r\n{delimiter}'):
                    cell = '"' + cell.replace('"', '""') + '"'
                cells.append(cell)
            lines.append(delimiter.join(cells))
            if rng.random() < 0.1:
                lines.append(rng.choice(["", "   ", delimiter]))
        ending = rng.choice(["\n", "\r\n", "\r"])
        data = ending.join(lines) + rng.choice([ending, ""])
        data = ("\ufeff" if rng.random() < 0.1 else "") + data
        outcome = check(data.encode("utf-8"), fmt)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        files += 1
    print(f"{files} random files: {outcomes}")
    assert outcomes["read"] > 1000 and outcomes["refused"] > 100  # both kinds well covered


def mmbench_tsv(lines: int, stray_quote_on: int | None = None) -> bytes:
    """An MMBench-style TSV of `lines` lines (the header, then one row a line), images as base64;
    a question on line `stray_quote_on` starting with a quote mark that never closes."""
    image = base64.b64encode(bytes(range(256)) * 4).decode()
    rows = ["index\tquestion\thint\tA\tB\tC\tD\tanswer\tcategory\tl2-category\tsplit\timage"]
    for n in range(1, lines):
        question = f"Which animal is shown in picture {n}?"
        if n + 1 == stray_quote_on:
            question = '"' + question
        rows.append(f"{n}\t{question}\t\tcat\tdog\tbird\tfish\tA\tperception\tobject\tdev\t{image}")
    return ("\n".join(rows) + "\n").encode()


@pytest.mark.parametrize("line", [2, 11, 121, 156])
def test_a_stray_quote_refuses_the_whole_file_naming_its_line_as_pandas_refuses_it(line):
    data = mmbench_tsv(156, stray_quote_on=line)
    assert pandas_read(data, "\t") is None  # EOF inside string
    got, refused = reader_read(data, TSV)
    assert got is None and refused.line == line
    assert f"the quoted cell that opens on line {line} never closes" in refused.message
    assert "Nothing was imported" in refused.message
    whole, _ = reader_read(mmbench_tsv(156), TSV)
    assert len(whole[1]) == 155 and whole == tuple(pandas_read(mmbench_tsv(156), "\t"))


def test_a_balanced_leading_quote_reads_as_pandas_reads_it():
    data = b'index\tquestion\n1\t"Stop" sign: what does it mean?\n2\t"Stop sign": what colour?\n'
    got, _ = reader_read(data, TSV)
    assert got[1] == [["1", "Stop sign: what does it mean?"], ["2", "Stop sign: what colour?"]]
    assert got == tuple(pandas_read(data, "\t"))


def test_an_empty_line_ended_by_a_lone_cr_before_a_row_of_spaces_is_refused_rather_than_misread():
    # pandas goes back over the lone \r and reads it as a cell: [["", " ", ""]] here, shifted.
    data = b"a\tb\tc\n1\t2\t3\r\n\r\t \t\r\n"
    assert pandas_read(data, "\t")[1][-1] == ["", " ", ""]
    got, refused = reader_read(data, TSV)
    assert got is None and refused.line == 3 and "lone carriage return" in refused.message
