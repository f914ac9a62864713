"""CSV for spreadsheets: a cell that a spreadsheet would run as a formula is shown as text."""

import csv
import io

from benchforge import spreadsheet


def test_cells_that_start_a_formula_are_neutralised_and_numbers_stay_numbers():
    out = io.StringIO()
    spreadsheet.writer(out).writerows(
        [
            ['=HYPERLINK("http://x","y")', "+1+2", "-2+3+cmd|' /C calc'!A0", "@SUM(A1)", "\tx", "\rx"],
            ["plain", -0.25, "-0.25", "1e-3", 3, "a=b", ""],
        ]
    )
    first, second = list(csv.reader(io.StringIO(out.getvalue())))
    assert all(cell.startswith("'") for cell in first)
    assert first[0] == '\'=HYPERLINK("http://x","y")'
    assert second == ["plain", "-0.25", "-0.25", "1e-3", "3", "a=b", ""]
