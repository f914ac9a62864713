"""The engine every LLM-driven scoring function shares: resumable, concurrent, parse-checked calls.

A scoring function describes each LLM request it needs as a Call (a key, how to build the
messages, how to read the reply). `send_calls` skips keys its sink already finished, sends the rest through
LLMClient.chat_many (bounded concurrency, rate limits, retries and the response cache live
there), writes one row per finished call to the sink as it completes, and re-asks a call whose
reply could not be read, with a short correction turn, up to `parse_retries` times. A call
still unreadable after that is recorded as "unparsed" (reported and counted, never dropped); a
call that failed for good is recorded as "error" and tried again on the next run.

Sink protocol (where rows go; the CLI's is SampleLog, a JSONL file; the platform's writes
database rows):

    done_rows() -> Mapping[str, dict]   rows finished by an earlier run (status "ok" or
                                        "unparsed"), by key: those calls are not asked again
    write(row: dict) -> None            one finished call, as it completes (called from one
                                        thread at a time); a later row for a key replaces
                                        an earlier one
    close() -> None                     the run is over (flush)

A row is {"key", **call.meta, "status": "ok" | "unparsed" | "error", "cached": bool, then the
parsed fields (status ok), "parse_error" (unparsed) or "error" (the call's message), and
"outputs" (the raw replies, when kept)}. Worker processes (workers > 1) need a sink that can
be split: part(index) -> Sink for worker `index`, and collect_parts() -> list of the rows the
parts wrote, called in the parent after the workers end.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from benchforge_harness.io import InputError, iter_jsonl_numbered, write_jsonl
from benchforge_harness.llm.limits import ForkSharedLimiter, set_process_limiter
from benchforge_harness.parsing import ParseError

OK, UNPARSED, ERROR = "ok", "unparsed", "error"
FINAL = (OK, UNPARSED)

# chat_many holds every request of a batch in memory, so requests carrying images (inline
# base64) are built and sent in chunks; a chunk is many times the concurrency, so the pause at
# each chunk's tail costs little. Text-only calls go in one batch.
CHUNK_PER_SLOT = 16
MIN_CHUNK = 512
# Rows are flushed to disk at least this often. A row lost to a hard kill is not lost work:
# its reply sits in the response cache and the next run reads it back without a call.
FLUSH_SECONDS = 0.5
# workers="auto": one Python process spends ~2.5 ms of CPU per call in the SDK, so it tops out
# near 400 calls/s. Only a long run against an endpoint allowed many concurrent calls can ask
# for more than that (64 slots at 100 ms is 640 calls/s); then a process per core, up to 4.
AUTO = "auto"
AUTO_MIN_CALLS = 1000
AUTO_MIN_CONCURRENCY = 16
AUTO_MAX_WORKERS = 4


def can_fork() -> bool:
    """Worker processes are forked (they inherit the calls' closures); Windows cannot fork."""
    return "fork" in multiprocessing.get_all_start_methods()


def auto_workers(pending: int, max_concurrency: int, cpus: int | None = None) -> int:
    """How many processes workers="auto" uses for `pending` calls to an endpoint. Never more
    than one on macOS, where forking after system frameworks are loaded is unsafe; there
    only an explicit --workers N forks."""
    if not can_fork() or sys.platform == "darwin":
        return 1
    if cpus is None:
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if pending < AUTO_MIN_CALLS or max_concurrency < AUTO_MIN_CONCURRENCY:
        return 1
    return max(1, min(cpus, AUTO_MAX_WORKERS, max_concurrency // (AUTO_MIN_CONCURRENCY // 2)))


@dataclass
class Call:
    """One LLM request of a scoring run, named by `key` (a finished key is not asked again)."""

    key: str
    build: Callable[[], list[dict]]  # the messages, built only when the chunk is sent
    meta: dict = field(default_factory=dict)  # copied into the sample row
    parse: Callable[[str], dict] | None = None  # reply -> fields for the row; raises ParseError
    retry: Callable[[str], str] | None = None  # parse problem -> correction message
    params: dict = field(default_factory=dict)


class Sink(Protocol):
    def done_rows(self) -> Mapping[str, dict]: ...

    def write(self, row: dict) -> None: ...

    def close(self) -> None: ...


class MemorySink:
    """Rows kept in a dict: for callers that store rows themselves after the run, and tests."""

    def __init__(self, rows: Iterable[dict] = ()):
        self.rows: dict[str, dict] = {row["key"]: row for row in rows}

    def done_rows(self) -> dict[str, dict]:
        return {key: row for key, row in self.rows.items() if row.get("status") in FINAL}

    def write(self, row: dict) -> None:
        self.rows[row["key"]] = row

    def close(self) -> None:
        pass


class SampleLog:
    """The CLI's sink: an append-only JSONL of sample rows keyed by "key"; the last row for a key
    wins. Worker processes write part files beside it, folded in by compact()."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.rows: dict[str, dict] = {}
        for source in [self.path, *self._parts()]:
            self._read(source)
        self._lock = threading.Lock()
        self._handle = None
        self._flushed = 0.0

    def part_path(self, index: int) -> Path:
        """Where worker process `index` writes its rows."""
        return self.path.with_name(f"{self.path.name}.part{index}")

    def _parts(self) -> list[Path]:
        return sorted(self.path.parent.glob(f"{self.path.name}.part*"))

    def _read(self, path: Path) -> list[dict]:
        """Load a log's rows. A torn last line (the process was killed mid-write) is cut off."""
        if not path.exists():
            return []
        data = path.read_bytes()
        if data and not data.endswith(b"\n"):
            keep = data.rfind(b"\n") + 1
            with path.open("r+b") as fh:
                fh.truncate(keep)
        rows = []
        for lineno, row in iter_jsonl_numbered(path):
            if not isinstance(row.get("key"), str):
                raise InputError(f"{path}:{lineno}: row without a 'key' (not a harness sample log?)")
            self.rows[row["key"]] = row
            rows.append(row)
        return rows

    def part(self, index: int) -> SampleLog:
        return SampleLog(self.part_path(index))

    def collect_parts(self) -> list[dict]:
        """Take in the rows the worker processes wrote. The part files stay until `compact`
        has written their rows into this log, so a crash in between loses nothing."""
        rows = []
        for part in self._parts():
            rows += self._read(part)
        return rows

    def finished(self, key: str) -> bool:
        row = self.rows.get(key)
        return row is not None and row.get("status") in FINAL

    def done_rows(self) -> dict[str, dict]:
        return {key: row for key, row in self.rows.items() if row.get("status") in FINAL}

    def write(self, row: dict) -> None:
        line = json.dumps(row, ensure_ascii=False) + "\n"
        with self._lock:
            if self._handle is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._handle = self.path.open("a", encoding="utf-8")
            self._handle.write(line)
            now = time.monotonic()
            if now - self._flushed >= FLUSH_SECONDS:
                self._handle.flush()
                self._flushed = now
            self.rows[row["key"]] = row

    def close(self) -> None:
        with self._lock:
            if self._handle is not None:
                self._handle.close()
                self._handle = None

    def compact(self, order: Iterable[str] = ()) -> None:
        """Rewrite the file with one row per key: `order` first, then any other keys kept as they were."""
        self.close()
        ordered = [key for key in order if key in self.rows]
        seen = set(ordered)
        ordered += [key for key in self.rows if key not in seen]
        write_jsonl(self.path, (self.rows[key] for key in ordered))
        for part in self._parts():  # left by an interrupted multi-process run, now folded in
            part.unlink()


class Progress:
    """Progress on a stream: a rewritten line on a terminal, a line every few seconds otherwise.
    Without a stream it only counts."""

    def __init__(self, label: str, total: int, stream=None, interval: float | None = None):
        self.label = label
        self.total = total
        self.done = 0
        self.cached = 0
        self.problems = 0
        self.stream = stream
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.interval = interval if interval is not None else (0.2 if self.tty else 5.0)
        self.started = time.monotonic()
        self._last = 0.0
        self._lock = threading.Lock()

    def advance(self, *, cached: bool = False, problem: bool = False) -> None:
        self.advance_many(1, int(cached), int(problem))

    def advance_many(self, done: int, cached: int, problems: int) -> None:
        with self._lock:
            self.done += done
            self.cached += cached
            self.problems += problems
            now = time.monotonic()
            if self.stream is not None and (now - self._last >= self.interval or self.done == self.total):
                self._last = now
                self._print(now)

    def _print(self, now: float) -> None:
        elapsed = max(now - self.started, 1e-9)
        rate = self.done / elapsed
        left = (self.total - self.done) / rate if rate else 0
        text = (
            f"{self.label}: {self.done}/{self.total} ({100 * self.done / max(self.total, 1):.0f}%) "
            f"{rate:.1f}/s, {self.cached} cached, {self.problems} problems, eta {left:.0f}s"
        )
        if self.tty:
            self.stream.write("\r" + text + ("\n" if self.done == self.total else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()


@dataclass
class RunStats:
    sent: int = 0  # calls that needed the model this run (finished rows are skipped)
    skipped: int = 0  # already finished in the sink
    ok: int = 0
    unparsed: int = 0
    errors: int = 0
    parse_retries: int = 0
    cached: int = 0  # calls whose every reply came from the response cache (never a failed one)
    usage: dict = field(default_factory=dict)  # the endpoint's usage counters for this run
    # Every row of the run's calls, finished earlier or now, by key (not part of as_dict).
    rows: dict = field(default_factory=dict, repr=False)

    COUNTS = ("sent", "skipped", "ok", "unparsed", "errors", "parse_retries", "cached")

    def add(self, other: dict) -> None:
        for name, value in other.items():
            if name == "usage":
                for key, count in value.items():
                    self.usage[key] = self.usage.get(key, 0) + count
            else:
                setattr(self, name, getattr(self, name) + value)

    def as_dict(self) -> dict:
        return {**{name: getattr(self, name) for name in self.COUNTS}, "usage": dict(self.usage)}


def send_calls(
    client,
    endpoint: str,
    calls: list[Call],
    sink: Sink,
    *,
    label: str,
    parse_retries: int = 2,
    keep_outputs: bool = True,
    with_images: bool = False,
    workers: int | str = 1,
    reopen: Callable[[int], Any] | None = None,
    progress_stream=None,
) -> RunStats:
    """Run every call the sink has not finished; returns counts for this run and every row.

    with_images: the messages carry inline images, so build and send them in chunks.
    workers > 1: split the calls over that many forked processes, each with its own client from
    reopen(workers) (requests_per_minute is split between them; max_concurrency holds for all
    of them together through one semaphore per endpoint made before the fork); for fast local
    endpoints, where the client's own CPU time per call, not the model, is what limits one
    process. workers="auto": as many as auto_workers() says for this run.
    progress_stream: where to print progress (None: nowhere).
    """
    stats = RunStats()
    done = sink.done_rows()
    pending = []
    for call in calls:
        if call.key in done:
            stats.skipped += 1
            stats.rows[call.key] = done[call.key]
        else:
            pending.append(call)
    stats.sent = len(pending)
    if not pending:
        return stats
    progress = Progress(label, len(pending), progress_stream)
    if workers == AUTO:
        workers = auto_workers(len(pending), client.endpoints[endpoint].max_concurrency) if reopen is not None else 1
    if workers > 1 and not can_fork():
        raise InputError(
            f"--workers {workers} needs worker processes started by fork, which this system "
            f"({sys.platform}) does not offer; use --workers 1"
        )
    if workers > 1 and reopen is not None and len(pending) >= 2 * workers:
        if not hasattr(sink, "part"):
            raise InputError(f"workers = {workers}: this sink cannot be split between worker processes; use workers = 1")
        if progress.stream is not None:
            print(f"{label}: {len(pending)} calls over {workers} worker processes", file=progress.stream, flush=True)
        limiter = ForkSharedLimiter(client.endpoints.values(), multiprocessing.get_context("fork")) if client else None
        _run_in_workers(
            reopen, workers, endpoint, pending, sink, stats, progress, parse_retries, keep_outputs, with_images, limiter
        )
    else:
        before = dict(client.usage.get(endpoint, {}))
        _run_here(client, endpoint, pending, sink, stats, progress, parse_retries, keep_outputs, with_images)
        after = client.usage.get(endpoint, {})
        stats.usage = {key: after[key] - before.get(key, 0) for key in after}
    stats.rows = {call.key: stats.rows[call.key] for call in calls if call.key in stats.rows}  # in the calls' order
    return stats


def _run_here(client, endpoint, calls, log, stats, progress, parse_retries, keep_outputs, with_images) -> None:
    chunk = len(calls)
    if with_images:
        chunk = max(MIN_CHUNK, CHUNK_PER_SLOT * client.endpoints[endpoint].max_concurrency)
    try:
        for start in range(0, len(calls), chunk):
            _run_chunk(client, endpoint, calls[start : start + chunk], log, stats, progress, parse_retries, keep_outputs)
    finally:
        log.close()


class _ProgressToParent:
    """A worker's progress, sent to the parent (which prints it) a few times a second."""

    def __init__(self, events):
        self.events = events
        self.pending = [0, 0, 0]  # done, cached, problems
        self._sent = time.monotonic()

    def advance(self, *, cached: bool = False, problem: bool = False) -> None:
        self.pending[0] += 1
        self.pending[1] += cached
        self.pending[2] += problem
        if time.monotonic() - self._sent >= 0.2:
            self.flush()

    def flush(self) -> None:
        if self.pending[0]:
            self.events.put(("rows", None, tuple(self.pending)))
            self.pending = [0, 0, 0]
        self._sent = time.monotonic()


def _worker_main(
    index, reopen, workers, endpoint, calls, part, events, parse_retries, keep_outputs, with_images, limiter
) -> None:
    stats = RunStats()
    progress = _ProgressToParent(events)
    try:
        if limiter is not None:  # every client this worker opens shares the parent's slots
            set_process_limiter(limiter)
        client = reopen(workers)
        _run_here(client, endpoint, calls, part, stats, progress, parse_retries, keep_outputs, with_images)
        stats.usage = dict(client.usage.get(endpoint, {}))
        failure = None
    except BaseException as exc:  # noqa: BLE001 - the parent reports it; finished rows are already in the part
        failure = f"{type(exc).__name__}: {exc}"
    progress.flush()
    events.put(("done", index, (stats.as_dict(), failure)))


def _run_in_workers(
    reopen, workers, endpoint, pending, sink, stats, progress, parse_retries, keep_outputs, with_images, limiter
) -> None:
    # fork: the calls (closures) are inherited, not pickled. Each worker writes to its own part of
    # the sink (a part file for SampleLog); the parent collects the parts back (SampleLog's
    # compaction folds them into the log; a later run reads any an interrupted one left behind).
    context = multiprocessing.get_context("fork")
    events = context.SimpleQueue()
    sink.close()
    processes = []
    for index in range(workers):
        process = context.Process(
            target=_worker_main,
            daemon=True,
            args=(
                index,
                reopen,
                workers,
                endpoint,
                pending[index::workers],
                sink.part(index),
                events,
                parse_retries,
                keep_outputs,
                with_images,
                limiter,
            ),
        )
        process.start()
        processes.append(process)
    failures = []
    reported: set[int] = set()
    try:
        while len(reported) < workers:
            if events.empty():
                # A worker that died without a word (killed, crashed) would leave us waiting forever;
                # one that exited has already written its last message, so an empty queue is final.
                for index, process in enumerate(processes):
                    if index not in reported and process.exitcode is not None and events.empty():
                        reported.add(index)
                        failures.append(f"worker {index} exited with code {process.exitcode}")
                time.sleep(0.05)
                continue
            kind, first, second = events.get()
            if kind == "rows":
                progress.advance_many(*second)
                continue
            reported.add(first)
            worker_stats, failure = second
            stats.add({k: v for k, v in worker_stats.items() if k not in ("sent", "skipped")})
            if failure:
                failures.append(failure)
    finally:
        for process in processes:
            process.join(timeout=30)
            if process.is_alive():
                process.terminate()
        keys = {call.key for call in pending}
        for row in sink.collect_parts():
            if row["key"] in keys:
                stats.rows[row["key"]] = row
    if failures:
        raise RuntimeError(
            f"{len(failures)} worker process(es) failed ({failures[0]}); finished samples are saved, run again to resume"
        )


def _run_chunk(client, endpoint, calls, log, stats, progress, parse_retries, keep_outputs) -> None:
    conversations = {call.key: call.build() for call in calls}
    outputs: dict[str, list[str]] = {call.key: [] for call in calls}
    all_cached: dict[str, bool] = {call.key: True for call in calls}
    round_calls = calls
    for attempt in range(parse_retries + 1):
        retry_next: list[Call] = []

        def finish(call: Call, status: str, fields: dict) -> None:
            row = {"key": call.key, **call.meta, "status": status, **fields}
            if keep_outputs:
                row["outputs"] = outputs[call.key]
            cached = status != ERROR and all_cached[call.key]  # a failed call was never answered by the cache
            row["cached"] = cached
            log.write(row)
            stats.rows[call.key] = row
            stats.cached += cached
            progress.advance(cached=cached, problem=status != OK)

        def on_result(index: int, result, round_calls=round_calls, attempt=attempt, retry_next=retry_next) -> None:
            call = round_calls[index]
            if isinstance(result, Exception):
                stats.errors += 1
                finish(call, ERROR, {"error": str(result)})
                return
            outputs[call.key].append(result.text)
            all_cached[call.key] = all_cached[call.key] and bool(result.cached)
            try:
                fields = call.parse(result.text) if call.parse else {}
            except ParseError as exc:
                if attempt < parse_retries and call.retry is not None:
                    stats.parse_retries += 1
                    conversations[call.key] = conversations[call.key] + [
                        {"role": "assistant", "content": result.text},
                        {"role": "user", "content": call.retry(str(exc))},
                    ]
                    retry_next.append(call)
                    return
                stats.unparsed += 1
                finish(call, UNPARSED, {"parse_error": str(exc)})
                return
            stats.ok += 1
            finish(call, OK, {**fields, "finish_reason": result.finish_reason})

        requests = [(conversations[call.key], call.params) for call in round_calls]
        client.chat_many(endpoint, requests, on_result=on_result)
        if not retry_next:
            break
        round_calls = retry_next
