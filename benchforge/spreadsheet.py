"""CSV and TSV meant to be opened in a spreadsheet: every text cell is neutral (OWASP's advice on
CSV injection). A cell a spreadsheet would read as a formula (starting with =, +, -, @, a tab or a
carriage return) gets a leading apostrophe, which spreadsheets show as text and do not run.
Numbers (ints, floats, and text that is only a number, such as -0.25) stay numbers.

Files that tools read as data (the MMBench TSV of a release or a QC run) are written raw instead:
they must keep the source's text byte for byte (docs/exports.md lists which is which)."""

import csv
import re

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def neutral(value):
    """The cell as a spreadsheet may safely read it."""
    if isinstance(value, str) and value.startswith(FORMULA_START) and not _NUMBER.match(value):
        return "'" + value
    return value


class NeutralWriter:
    """csv.writer whose rows are neutralised cell by cell."""

    def __init__(self, out, **options):
        self._writer = csv.writer(out, **options)

    def writerow(self, row):
        return self._writer.writerow([neutral(cell) for cell in row])

    def writerows(self, rows):
        for row in rows:
            self.writerow(row)


def writer(out, **options) -> NeutralWriter:
    return NeutralWriter(out, **options)
