"""The usage and cost ledger (llm.models.Usage): the one place every job that calls a model is
billed. The platform client reports each count the harness client makes (LLMClient's meter) to
its Meter, for the job run that pays (the CallTrace's payer).

A request is written before it is sent (one atomic increment while the call holds its slot), so a
worker killed with calls in flight has already counted them; an answer from the response cache
is written as it is served, likewise. Every other count (retries, failures, tokens) is held in memory and rides along with the next request written to the
same row, or is written on its own once it has waited SETTLE_SECONDS (a run answered from the
cache sends no request), and in any case when the client closes: one database write per request
instead of two, where call threads of a worker all write the same row. A worker killed outright
loses at most the counts it held (retries and tokens of its last replies, never a request or a
cache hit); nothing is written twice, as each held amount is taken from
memory by the one write that carries it.

Reads are in llm.selectors (usage_of)."""

from __future__ import annotations

import logging
import threading
import time
from contextlib import nullcontext

from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import F

from .context import current, serial_db
from .models import Usage

log = logging.getLogger(__name__)

# The harness's count names (benchforge_harness.llm.client.USAGE_FIELDS) -> the ledger's columns.
COLUMNS = {
    "calls": "requests",
    "cache_hits": "cache_hits",
    "retries": "retries",
    "failures": "failures",
    "prompt_tokens": "prompt_tokens",
    "completion_tokens": "completion_tokens",
}
SENT = "calls"  # written as it is made
# Counts written as they are made, with no wait: a request before it is sent, an answer served from
# the cache as it is served (a worker killed right after still has them in the ledger).
AT_ONCE = (SENT, "cache_hits")
SETTLE_SECONDS = 0.5  # the longest a held count waits for a request to ride along with


def note(payer: tuple[int, int], endpoint: str, amounts: dict[str, int]) -> None:
    """Add `amounts` (harness count names) to what job run `payer` (job id, run number) spent at
    `endpoint`: one atomic increment, exact however many threads count at once."""
    changes = {COLUMNS[name]: amount for name, amount in amounts.items() if amount and name in COLUMNS}
    if not changes:
        return
    job_id, run_no = payer
    rows = Usage.objects.filter(job_id=job_id, run=run_no, endpoint=endpoint)
    update = {column: F(column) + amount for column, amount in changes.items()}
    try:
        with serial_db(), _guarded():
            if rows.update(**update):
                return
            try:
                with transaction.atomic():
                    Usage.objects.create(job_id=job_id, run=run_no, endpoint=endpoint, **changes)
            except IntegrityError:  # another thread of this run created it first
                rows.update(**update)
    except DatabaseError as exc:
        # The call goes on (a failed count must not fail it); the log says what the ledger missed.
        log.warning("LLM usage: cannot count %s at %s for job %s in the database (%s)", changes, endpoint, job_id, exc)


def note_sent(payer: tuple[int, int], endpoint: str) -> None:
    """Count one request to `endpoint` paid by job run `payer`."""
    note(payer, endpoint, {SENT: 1})


class Meter:
    """One client's counts on their way to the ledger (see the module's docstring): the harness
    client's meter plug-in, called with each count as it is made, in the thread making the call;
    `settle` writes what is held (the client's close calls it). Thread-safe.

    The run billed is the one of the call's CallTrace, else `payer` (a client made for one job
    run); counts nobody pays for are not kept. The trace also learns how many requests its call
    made."""

    def __init__(self, *, payer: tuple[int, int] | None = None, clock=time.monotonic):
        self.payer = payer
        self.clock = clock
        self.lock = threading.Lock()
        self.held: dict[tuple[tuple[int, int], str], dict[str, int]] = {}
        self.since: dict[tuple[tuple[int, int], str], float] = {}  # when the oldest held count came

    def __call__(self, endpoint: str, amounts: dict[str, int]) -> None:
        trace = current()
        if trace is not None:
            trace.attempts += amounts.get("calls", 0)
        payer = trace.payer if trace is not None else self.payer
        if payer is not None:
            self.count(payer, endpoint, amounts)

    def count(self, payer: tuple[int, int], endpoint: str, amounts: dict[str, int]) -> None:
        row = (payer, endpoint)
        at_once = {name: amounts[name] for name in AT_ONCE if amounts.get(name)}
        sent = bool(at_once)
        with self.lock:
            now = self.clock()
            held = self.held.get(row)
            for name, amount in amounts.items():
                if amount and name not in AT_ONCE and name in COLUMNS:
                    if held is None:
                        held = self.held[row] = {}
                        self.since[row] = now
                    held[name] = held.get(name, 0) + amount
            if not sent and (held is None or now - self.since[row] < SETTLE_SECONDS):
                return
            changes = self._take(row)
        for name, amount in at_once.items():
            changes[name] = changes.get(name, 0) + amount
        note(payer, endpoint, changes)

    def settle(self) -> None:
        """Write every held count now."""
        with self.lock:
            taken = [(row, self._take(row)) for row in list(self.held)]
        for (payer, endpoint), changes in taken:
            note(payer, endpoint, changes)

    def _take(self, row) -> dict[str, int]:
        self.since.pop(row, None)
        return self.held.pop(row, None) or {}


def _guarded():
    """Inside the caller's transaction, a savepoint: a failed count must not break the caller's
    work. Outside one (call threads), plain autocommit writes: nothing to add."""
    return transaction.atomic() if connection.in_atomic_block else nullcontext()
