"""benchforge_harness.tabular, the one reader of TSV, CSV, JSON Lines and JSON lists: exact lines, bounded
nesting and sizes, row problems counted and the file refused past a limit."""

import io

import pytest

from benchforge_harness.io import InputError, iter_jsonl
from benchforge_harness.tabular import CSV, JSON, JSONL, LINES, TSV, FileProblem, Limits, TableReader, loads_bounded

DEEP = b"[" * 100_000 + b"]" * 100_000


def read(data: bytes, fmt: str, **kwargs):
    reader = TableReader(io.BytesIO(data), name="f", format=fmt, **kwargs)
    return [(r.where, r.value, r.problem) for r in reader], reader


def test_a_bad_byte_is_named_on_its_own_line_past_8_kb_lines_and_quoted_line_breaks():
    long_cell = "x" * 20_000
    data = f'a\tb\n1\t{long_cell}\n2\t"two\nlines"\n3\tok\n'.encode() + b"4\tbad \xc3( here\n5\tlast\n"
    with pytest.raises(FileProblem) as caught:
        read(data, TSV)
    assert caught.value.line == 6 and "line 6 is not UTF-8 text (byte 0xc3 at column 7)" in caught.value.message


def test_a_bad_byte_on_the_last_line_without_a_newline():
    with pytest.raises(FileProblem, match=r"line 3 is not UTF-8 text \(byte 0xff at column 1\)"):
        read(b'{"a": 1}\n{"a": 2}\n\xff', JSONL)


def test_records_start_on_their_first_line_and_blank_lines_are_skipped():
    rows, reader = read(b'\xef\xbb\xbfa,b\r\n1,"x\r\ny"\r\n\r\n2,3\r\n4\r\n,\r\n', CSV)
    assert rows == [
        ("line 2", {"a": "1", "b": "x\r\ny"}, ""),
        ("line 5", {"a": "2", "b": "3"}, ""),
        ("line 6", {"a": "4", "b": ""}, ""),  # a short row is filled with empty cells, as pandas fills it
        ("line 7", {"a": "", "b": ""}, ""),  # a row of delimiters is a row (of empty cells)
    ]
    records = list(TableReader(io.BytesIO(b"a,b\n4\n,\n"), name="f", format=CSV))
    assert [r.missing for r in records] == [("b",), ()] and [r.blank for r in records] == [False, True]
    assert reader.rows == 4 and reader.problem_count == 0


def test_a_lone_carriage_return_ends_a_row_as_pandas_reads_it():
    rows, _ = read(b"a\tb\nx\ry\t1\n", TSV)
    assert [value for _, value, _ in rows] == [{"a": "x", "b": ""}, {"a": "y", "b": "1"}]


def test_a_row_with_more_cells_than_the_header_is_the_files_problem():
    with pytest.raises(FileProblem, match=r"line 3 has 3 cells but the header \(line 1\) names 2 columns"):
        read(b"a\tb\n1\t2\n3\t4\t5\n", TSV)


def test_deep_nesting_is_a_row_problem_in_json_lines_and_in_a_json_list():
    rows, _ = read(b'{"a": 1}\n' + DEEP + b'\n{"a": 2}\n', JSONL)
    assert rows[1] == ("line 2", None, "it is nested more than 64 levels deep")
    assert rows[2] == ("line 3", {"a": 2}, "")
    rows, _ = read(b'[{"a": 1}, ' + DEEP + b',\n {"a": "[[[ in a string ]"}]', JSON)
    assert rows == [
        ("line 1, element 1", {"a": 1}, ""),
        ("line 1, element 2", None, "it is nested more than 64 levels deep"),
        ("line 2, element 3", {"a": "[[[ in a string ]"}, ""),
    ]
    with pytest.raises(ValueError, match="nested more than 3 levels"):
        loads_bounded("[[[[1]]]]", max_depth=3)
    assert loads_bounded("[[[1]]]", max_depth=3) == [[[1]]]


def test_json_values_the_database_cannot_take_are_row_problems():
    rows, _ = read(b'{"a": "\\u0000"}\n{"a": ' + b"1" * 5000 + b"}\n[1]\n", JSONL)
    assert "NUL character" in rows[0][2]
    assert rows[1][2].startswith("not valid JSON")
    assert rows[2][2] == "expected a JSON object, not a list"


def test_a_json_list_that_does_not_close_or_runs_on_is_the_files_problem():
    with pytest.raises(FileProblem, match="does not close"):
        read(b'[{"a": 1},\n' + b"[" * 100_000, JSON)
    with pytest.raises(FileProblem, match="line 2: text after the end of the JSON list"):
        read(b'[{"a": 1}]\n{"b": 2}', JSON)


def test_an_over_long_line_is_skipped_and_reading_goes_on():
    limits = Limits(max_line_bytes=100, max_field_chars=10)
    rows, _ = read(b"a,b\n" + b"y" * 500 + b",1\n2,3\n" + b"z" * 11 + b",4\n", CSV, limits=limits)
    assert rows == [
        ("line 2", None, "the line is 503 bytes; a line may be at most 100 bytes"),
        ("line 3", {"a": "2", "b": "3"}, ""),
        ("line 4", None, "'a' is 11 bytes; a cell may be at most 10 bytes"),
    ]
    rows, _ = read(b'{"a": 1}\n{"b": "' + b"q" * 500 + b'"}\n{"c": 3}\n', JSONL, limits=limits)
    assert [r[0] for r in rows] == ["line 1", "line 2", "line 3"] and rows[1][2].startswith("the line is")


def test_a_quote_that_never_closes_is_the_files_problem():
    with pytest.raises(FileProblem, match="the quoted cell that opens on line 2 runs on past line 41 and 200 bytes"):
        read(b'a,b\n1,"open\n' + b"more\n" * 100, CSV, limits=Limits(max_line_bytes=200))
    with pytest.raises(FileProblem, match="the quoted cell that opens on line 2 never closes") as caught:
        read(b'a,b\n1,"open\n' + b"more\n" * 10, CSV)
    assert caught.value.line == 2


def test_too_many_problems_stop_the_reader_with_a_summary():
    with pytest.raises(FileProblem) as caught:
        read(b"a,b\n" + b"1\x00,2\n" * 50, CSV, limits=Limits(max_problems=3))
    message = caught.value.message
    assert "stopped at line 5: more than 3 rows have problems" in message
    assert "4 problem(s): line 2: the row contains a NUL character" in message


def test_an_importers_own_problems_count_too_and_all_or_nothing_files_list_them():
    reader = TableReader(io.BytesIO(b"x\n" * 10), name="urls.txt", format=LINES, limits=Limits(max_problems=100))
    for record in reader:
        if record.value == "x" and record.line % 2:
            reader.problem(record, "not a URL")
    with pytest.raises(FileProblem, match=r"urls.txt was not imported: 5 problem\(s\): line 1: not a URL; line 3"):
        reader.refuse_if_problems()


def test_a_missing_header_column_is_the_files_problem():
    with pytest.raises(FileProblem, match=r"the header \(line 2\) lacks the column\(s\) image"):
        read(b"\n index\tquestion\n1\tq\n", TSV, required=("index", "image"))


def test_the_harness_reads_its_json_lines_through_it(tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_bytes(b'{"id": "a"}\n' + DEEP + b"\n")
    with pytest.raises(InputError, match=r"items.jsonl:2: it is nested more than 64 levels deep"):
        list(iter_jsonl(path))
    path.write_bytes(b'{"id": "a"}\n{"id": "\xff"}\n')
    with pytest.raises(InputError, match=r"line 2 is not UTF-8 text"):
        list(iter_jsonl(path))
