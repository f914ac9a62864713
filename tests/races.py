"""The race kit: N requests released together by one barrier against the real views and API, then
the invariants that must hold afterwards, asked of the database in SQL.

Each request runs in its own thread with its own test client and its own Postgres connection, the
way gunicorn's threads would run them, so the locks (or their absence) decide the outcome. Only
Postgres can show a race: SQLite serialises every writer (IMMEDIATE transactions), so the tests
that use this kit ask for the `postgres` fixture (tests/conftest.py), which skips loudly elsewhere and
fails under CI=true.

    results = race([lambda: client.post(url, data)] * 8)
    assert no_server_errors(results)
    assert violations("SELECT ... rows that break the rule ...") == []
"""

from __future__ import annotations

import threading
import traceback
from dataclasses import dataclass

from django.db import connection, connections


@dataclass
class Result:
    status: int  # 599: the view raised instead of answering (the test client re-raises exceptions)
    body: dict | str
    error: str = ""

    @property
    def json(self) -> dict:
        return self.body if isinstance(self.body, dict) else {}


def _answer(response) -> Result:
    content_type = response.get("Content-Type", "")
    if content_type.startswith("application/json"):
        return Result(response.status_code, response.json())
    body = b"" if getattr(response, "streaming", False) else response.content
    return Result(response.status_code, body.decode("utf-8", "replace")[:2000])


def race(calls, *, timeout: float = 120) -> list[Result]:
    """Run each call (it makes one request with its own client and returns the response) in its own
    thread, all released by one barrier; the results in the order of `calls`."""
    calls = list(calls)
    barrier = threading.Barrier(len(calls))
    results: list[Result | None] = [None] * len(calls)

    def run(n, call):
        try:
            barrier.wait(timeout)
            results[n] = _answer(call())
        except Exception as exc:  # a crash is a 5xx the user would have seen
            results[n] = Result(599, "", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-3000:]}")
        finally:
            connections.close_all()  # this thread's connection; the test's own stays open

    threads = [threading.Thread(target=run, args=(n, call), name=f"race-{n}") for n, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    stuck = [t.name for t in threads if t.is_alive()]
    assert not stuck, f"requests still running after {timeout:.0f} s: {stuck}"
    return results  # type: ignore[return-value]


def server_errors(results: list[Result]) -> list[str]:
    """What each 5xx was (an empty list is the goal)."""
    return [r.error or f"{r.status}: {r.body}" for r in results if r.status >= 500]


def statuses(results: list[Result]) -> list[int]:
    return sorted(r.status for r in results)


def rows(sql: str, params=()) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def violations(sql: str, params=()) -> list[tuple]:
    """Rows of a query that selects what breaks an invariant (so the expected answer is [])."""
    return rows(sql, params)


# ---- invariants: each query selects the rows that break one rule (so the answer must be none) ----------
# They hold whatever order simultaneous requests ran in; the race tests and bench/soak.py ask them.

INVARIANTS: dict[str, str] = {
    "an open assignment's item belongs to another person": """
        SELECT a.id, i.id, a.assignee_id, i.assignee_id FROM annotation_assignment a
        JOIN annotation_item i ON i.id = a.item_id
        WHERE a.status = 'open' AND i.assignee_id IS DISTINCT FROM a.assignee_id""",
    "work in progress assigned to someone without an assignment": """
        SELECT i.id, i.assignee_id FROM annotation_item i
        WHERE i.status IN ('draft', 'revision') AND i.assignee_id IS NOT NULL AND NOT EXISTS (
            SELECT 1 FROM annotation_assignment a WHERE a.item_id = i.id AND a.status = 'open' AND a.assignee_id = i.assignee_id)""",
    "a submitted item still has an open assignment": """
        SELECT a.id, a.item_id, i.status FROM annotation_assignment a JOIN annotation_item i ON i.id = a.item_id
        WHERE a.status = 'open' AND i.status NOT IN ('draft', 'revision')""",
    "an image handed out twice for a task": """
        SELECT a.task_id, a.image_id, count(*) FROM annotation_assignment a
        WHERE a.image_id IS NOT NULL GROUP BY a.task_id, a.image_id HAVING count(*) > 1""",
    "an item's history has a gap or an extra row": """
        SELECT i.id, i.version, count(v.id), min(v.version), max(v.version) FROM annotation_item i
        LEFT JOIN annotation_itemrevision v ON v.item_id = i.id GROUP BY i.id, i.version
        HAVING count(v.id) <> i.version OR min(v.version) <> 1 OR max(v.version) <> i.version""",
    "every review of an entry is given, yet it is undecided": """
        SELECT e.id, e.item_id FROM review_rounditem e JOIN review_reviewround r ON r.id = e.round_id
        WHERE r.status <> 'opening' AND e.outcome = '' AND NOT EXISTS (
            SELECT 1 FROM review_review v WHERE v.entry_id = e.id AND v.verdict = '')""",
    "a round's decision moved the item elsewhere than its outcome": """
        SELECT e.id, e.outcome, v.snapshot->>'status' FROM review_rounditem e
        JOIN review_reviewround r ON r.id = e.round_id AND r.kind = 'cross'
        JOIN annotation_itemrevision v ON v.item_id = e.item_id AND v.version = (
            SELECT min(w.version) FROM annotation_itemrevision w
            WHERE w.item_id = e.item_id AND w.version > e.version AND w.action = 'reviewed')
        WHERE e.outcome <> '' AND v.snapshot->>'status' <> CASE e.outcome
            WHEN 'accepted' THEN 'accepted' WHEN 'revision' THEN 'revision' WHEN 'rejected' THEN 'rejected' ELSE 'answered' END""",
    "a round decided an item without moving it": """
        SELECT e.id, e.outcome FROM review_rounditem e JOIN review_reviewround r ON r.id = e.round_id AND r.kind = 'cross'
        WHERE e.outcome <> '' AND NOT EXISTS (SELECT 1 FROM annotation_itemrevision w
            WHERE w.item_id = e.item_id AND w.version > e.version AND w.action = 'reviewed')""",
    "an item left review while its round has not decided it": """
        SELECT e.id, i.id, i.status FROM review_rounditem e JOIN review_reviewround r ON r.id = e.round_id
        JOIN annotation_item i ON i.id = e.item_id
        WHERE r.kind = 'cross' AND r.status = 'open' AND e.outcome = '' AND i.status <> 'in_review'""",
    "an item in review outside an open round": """
        SELECT i.id FROM annotation_item i WHERE i.status = 'in_review' AND NOT EXISTS (
            SELECT 1 FROM review_rounditem e JOIN review_reviewround r ON r.id = e.round_id
            WHERE e.item_id = i.id AND e.outcome = '' AND r.status IN ('opening', 'open'))""",
    "a round with nothing left to decide is still open": """
        SELECT r.id FROM review_reviewround r WHERE r.status = 'open'
          AND NOT EXISTS (SELECT 1 FROM review_rounditem e WHERE e.round_id = r.id AND e.outcome = '')""",
    "a round decided an item more than once": """
        SELECT e.id, count(w.id) FROM review_rounditem e
        JOIN annotation_itemrevision w ON w.item_id = e.item_id AND w.action = 'reviewed' AND w.version > e.version
          AND w.version < COALESCE((SELECT min(n.version) FROM review_rounditem n WHERE n.item_id = e.item_id AND n.id > e.id),
                                   2147483647)
        GROUP BY e.id HAVING count(w.id) > 1""",
    "more than one review round open": """
        SELECT r.benchmark_id, count(*) FROM review_reviewround r WHERE r.status <> 'closed'
        GROUP BY r.benchmark_id HAVING count(*) > 1""",
    "a QC decision the item's status contradicts": """
        SELECT e.item_id, e.decision, i.status FROM qc_qcitem e JOIN annotation_item i ON i.id = e.item_id
        WHERE e.decided_at = (SELECT max(e2.decided_at) FROM qc_qcitem e2 WHERE e2.item_id = e.item_id)
          AND ((e.decision = 'remove' AND i.status <> 'qc_flagged')
            OR (e.decision IN ('keep', 'fix') AND i.status NOT IN ('qc_passed', 'released')))""",
    "an item QC removed is in a frozen release": """
        SELECT ri.release_id, ri.item_id FROM exports_releaseitem ri JOIN exports_release r ON r.id = ri.release_id
        JOIN qc_qcitem e ON e.item_id = ri.item_id
        WHERE r.status = 'frozen' AND e.decision = 'remove' AND e.decided_at < r.frozen_at
          AND e.decided_at = (SELECT max(e2.decided_at) FROM qc_qcitem e2 WHERE e2.item_id = e.item_id)""",
    "an approved rewrite without its one item": """
        SELECT r.id, r.item_id FROM rewrite_rewrite r WHERE r.state = 'approved' AND (r.item_id IS NULL OR NOT EXISTS (
            SELECT 1 FROM annotation_item i WHERE i.id = r.item_id AND i.seed_id = r.seed_id))""",
    "a rewrite not approved has an item": """
        SELECT r.id, r.item_id FROM rewrite_rewrite r WHERE r.state <> 'approved' AND r.item_id IS NOT NULL""",
    "a seed's items made by verification are not its approved rewrites": """
        SELECT s.id, count(i.id) FROM annotation_item s JOIN annotation_item i ON i.seed_id = s.id
        JOIN annotation_itemrevision v ON v.item_id = i.id AND v.version = 1 AND v.action = 'rewritten'
        GROUP BY s.id
        HAVING count(i.id) <> (SELECT count(*) FROM rewrite_rewrite r WHERE r.seed_id = s.id AND r.state = 'approved')""",
    "a seed moved to rewritten more than once": """
        SELECT v.item_id, count(*) FROM annotation_itemrevision v
        WHERE v.action = 'rewritten' AND v.snapshot->>'status' = 'rewritten' GROUP BY v.item_id HAVING count(*) > 1""",
    "a release build job failed": """
        SELECT j.params->>'release', j.id, j.message FROM jobs_job j WHERE j.kind = 'release_build' AND j.status = 'failed'""",
    "two builds of one release at once": """
        SELECT a.params->>'release', a.id, b.id FROM jobs_job a JOIN jobs_job b ON a.id < b.id
        WHERE a.kind = 'release_build' AND b.kind = 'release_build' AND a.params->>'release' = b.params->>'release'
          AND a.started_at IS NOT NULL AND b.started_at IS NOT NULL
          AND a.started_at < COALESCE(b.finished_at, now()) AND b.started_at < COALESCE(a.finished_at, now())""",
    "a built or frozen release whose job is not the last build that succeeded": """
        SELECT r.id, r.status, r.job_id FROM exports_release r WHERE r.status IN ('built', 'frozen')
          AND r.job_id IS DISTINCT FROM (
            SELECT j.id FROM jobs_job j WHERE j.kind = 'release_build' AND j.params->>'release' = r.id::text
              AND j.status = 'succeeded' ORDER BY j.finished_at DESC LIMIT 1)""",
    "a build that ran after its release was frozen": """
        SELECT r.id, j.id FROM exports_release r JOIN jobs_job j
          ON j.kind = 'release_build' AND j.params->>'release' = r.id::text
        WHERE r.status = 'frozen' AND COALESCE(j.finished_at, now()) > r.frozen_at""",
    "a frozen release holds an item that is not released": """
        SELECT ri.release_id, ri.item_id, i.status FROM exports_releaseitem ri
        JOIN exports_release r ON r.id = ri.release_id JOIN annotation_item i ON i.id = ri.item_id
        WHERE r.status = 'frozen' AND i.status <> 'released'""",
}


def broken(*names: str) -> dict[str, list[tuple]]:
    """The invariants (all, or those named) that some rows break, with those rows."""
    found = {}
    for name in names or INVARIANTS:
        offending = violations(INVARIANTS[name])
        if offending:
            found[name] = offending
    return found
