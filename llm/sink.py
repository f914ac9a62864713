"""Where the harness's scoring functions write their rows inside a platform job: the job's
entries (benchforge_harness.calls's Sink protocol), for QC runs, leaderboard scores and whatever asks the
harness next. What the calls spent is not here: the client bills it to the usage ledger.

Each finished call is one unit of the job, keyed by the harness's row key (under the caller's
prefix), its row kept in the entry's data: a row recorded ok is never asked again when the job
resumes (done_rows), a failed call is. Rows are written in groups (a call's reply is in the
shared response cache the moment it arrives, so a row lost to a killed worker costs no request
on resume, only a cache read).

    sink = JobSink(run)                       # keys as the harness makes them
    circular_eval(client, items, models, sink=sink)
    answer_questions(..., sink=sink.scoped("answer\\tgpt\\t"))   # a view whose keys carry a prefix
"""

from __future__ import annotations

import time

from benchforge_harness.scoring import ERROR, FINAL
from jobs.runner import JobRun

from .context import serial_db

FLUSH_ROWS = 200
FLUSH_SECONDS = 0.5


class JobSink:
    """The job's entries as a harness sink. `unplanned`: key prefixes of calls that come on top of
    the job's planned total (QC's extractor calls, asked only when a reply has no readable
    letter): each new one grows the total, so the progress bar stays honest."""

    def __init__(self, run: JobRun, *, unplanned: tuple[str, ...] = ()):
        self.run = run
        self.unplanned = tuple(unplanned)
        self.rows: dict[str, dict] = {
            key: data for key, data in run.done_rows().items() if isinstance(data, dict) and data.get("status") in FINAL
        }
        self.pending: list[dict] = []
        self.flushed = time.monotonic()
        self.written = 0  # rows written by this run
        self.extra = 0

    def done_rows(self) -> dict[str, dict]:
        return {key: row for key, row in self.rows.items() if row.get("status") in FINAL}

    def write(self, row: dict) -> None:
        key = row["key"]
        if self.unplanned and key not in self.rows and key.startswith(self.unplanned):
            self.extra += 1
        self.rows[key] = row
        self.pending.append(row)
        if len(self.pending) >= FLUSH_ROWS or time.monotonic() - self.flushed >= FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        rows, self.pending = self.pending, []
        self.flushed = time.monotonic()
        if not rows:
            return
        with serial_db():
            if self.extra:
                self.run.set_total(self.run.job.total + self.extra)
                self.extra = 0
            self.run.record_many(
                [(row["key"], "error" if row["status"] == ERROR else "ok", str(row.get("error", ""))[:2000], row) for row in rows]
            )
        self.written += len(rows)

    def close(self) -> None:
        self.flush()

    def scoped(self, prefix: str) -> ScopedSink:
        return ScopedSink(self, prefix)


class ScopedSink:
    """A view of the sink whose keys carry a prefix: harness functions that key rows by item id
    alone (answer_questions) share one job with every model, or every step of a score."""

    def __init__(self, sink: JobSink, prefix: str):
        self.sink = sink
        self.prefix = prefix

    def done_rows(self) -> dict[str, dict]:
        n = len(self.prefix)
        return {key[n:]: {**row, "key": key[n:]} for key, row in self.sink.done_rows().items() if key.startswith(self.prefix)}

    def write(self, row: dict) -> None:
        self.sink.write({**row, "key": self.prefix + row["key"]})

    def close(self) -> None:
        self.sink.close()
