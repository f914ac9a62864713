"""The durable count of requests sent: one atomic increment per HTTP attempt, written before the
request leaves (from the limiter slot the attempt holds), so a worker killed while calls are in
flight has already counted them. Reads are in llm.selectors (sent_requests)."""

from __future__ import annotations

import logging
from contextlib import nullcontext

from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import F

from .context import serial_db
from .models import SentRequests

log = logging.getLogger(__name__)


def note_sent(payer: tuple[int, int], endpoint: str) -> None:
    """Count one request to `endpoint` paid by job run `payer` (job id, run number)."""
    job_id, run_no = payer
    rows = SentRequests.objects.filter(job_id=job_id, run=run_no, endpoint=endpoint)
    try:
        with serial_db(), _guarded():
            if rows.update(requests=F("requests") + 1):
                return
            try:
                with transaction.atomic():
                    SentRequests.objects.create(job_id=job_id, run=run_no, endpoint=endpoint, requests=1)
            except IntegrityError:  # another thread of this run created it first
                rows.update(requests=F("requests") + 1)
    except DatabaseError as exc:
        # The request is still sent (its attempt is recorded with its call, which the usage also reads).
        log.warning("LLM usage: cannot count a request to %s for job %s in the database (%s)", endpoint, job_id, exc)


def _guarded():
    """Inside the caller's transaction, a savepoint: a failed count must not break the caller's
    work. Outside one (call threads), plain autocommit writes: nothing to add."""
    return transaction.atomic() if connection.in_atomic_block else nullcontext()
