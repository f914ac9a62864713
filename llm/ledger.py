"""The usage and cost ledger (llm.models.Usage): the one place every job that calls a model is
billed. The platform client reports each count the harness client makes (LLMClient's meter) for
the job run that pays (the CallTrace's payer): a request is written before it is sent, so a worker
killed with calls in flight has already counted them, and its tokens once the reply is in the
response cache (the reply is safe first: a worker killed in that instant loses a token count, never
a paid reply).
Reads are in llm.selectors (usage_of)."""

from __future__ import annotations

import logging
from contextlib import nullcontext

from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import F

from .context import serial_db
from .models import Usage

log = logging.getLogger(__name__)

# The harness's count names (harness.llm.client.USAGE_FIELDS) -> the ledger's columns.
COLUMNS = {
    "calls": "requests",
    "cache_hits": "cache_hits",
    "retries": "retries",
    "failures": "failures",
    "prompt_tokens": "prompt_tokens",
    "completion_tokens": "completion_tokens",
}


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
    note(payer, endpoint, {"calls": 1})


def _guarded():
    """Inside the caller's transaction, a savepoint: a failed count must not break the caller's
    work. Outside one (call threads), plain autocommit writes: nothing to add."""
    return transaction.atomic() if connection.in_atomic_block else nullcontext()
