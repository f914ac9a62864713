"""Web load: the five busiest pages under 20 concurrent members, on Postgres, at Label Studio scale.

Run: .venv/bin/python bench/web_load.py [--items 100000] [--images 200000] [--clients 20] [--seconds 60] [--workers 2]

It creates a throwaway Postgres database (dropped at the end) and fills it with COPY (about a
minute for the defaults): a benchmark of --items items (two images and two criteria each, their
history), --images image rows (no files: the pages only link them), 20 members (reviewers, who
also annotate), open and done assignments, a closed review round over the decided items and an
open one over the items in review. It serves the app with gunicorn (--workers sync processes,
DEBUG off) and runs --clients closed-loop clients in threads, each logged in as its own member,
going round the review queue, the items list (varied filters and pages), their queue, the
editor of one of their items and the benchmark's dashboard, with no think time.

With --writes F (e.g. 0.05), that share of each client's requests are writes that change what waits
for the team: the client submits one of its drafts through the API, then takes it back in the editor,
in turn (a kept world ends as it began). Every such write drops what pages keep of the benchmark's
work (counts, queues, list counts), so the pages show what they cost in a team at work; with closed-
loop clients and no think time that is far more writes per second than people make (the worst case).

Prints per page p50/p95/p99 as the clients saw them (target: p95 < 100 ms on a quiet 2-core machine)
and what the server spent on each request (wall time inside the worker, its CPU time, time in
database calls, number of queries; from a timing wrapper around the WSGI app): client time far
above server time is queueing for a worker; server wall time far above CPU + database time is
CPU contention from other work on the machine (the load average is printed with the numbers).

The budget is CPU time per request in the worker (process time, not wall time: with closed-loop
clients the client p95 follows it, 20 clients x CPU per request / 2 cores, and it stays meaningful
on a machine others share): on average at most 6 ms per page, 8 ms for the items list (BUDGET_MS).
The script exits non-zero when a page misses its budget or its p95 target, or a request fails.
`make bench` runs it at 100,000 items; --items 1000000 is the large run (same budgets).

Admin connection: BENCH_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/postgres). The web
processes share the cache in BENCH_CACHE_URL (default redis://127.0.0.1:6379/14, emptied before and
after; without Redis each process keeps its own), as docs/deploy.md asks of a deployment.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import http.client
import io
import json
import os
import random
import re
import secrets
import statistics
import sys
import threading
import time
from pathlib import Path

import psycopg2

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.support.throwaway import ADMIN_URL, admin, database_url  # noqa: E402
from bench.support.web import empty_redis, serve  # noqa: E402

# The web processes share a cache as docs/deploy.md asks (CACHE_URL); this Redis database is emptied
# before and after the run, so use one nothing else keeps anything in.
CACHE_URL = os.environ.get("BENCH_CACHE_URL", "redis://127.0.0.1:6379/14")
SLUG = "load"
MEMBERS = 20
OPEN_PER_MEMBER = 60
PAGES = ("review queue", "items list", "queue", "editor", "dashboard")
TIMING_HEADER = "X-Bench-Timing"
# Mean CPU ms per request in the worker (issue 43), and the client p95 target.
BUDGET_MS = {"review queue": 6.0, "items list": 8.0, "queue": 6.0, "editor": 6.0, "dashboard": 6.0}
P95_TARGET_MS = 100.0

_django_app = None


def application(environ, start_response):
    """The app as gunicorn serves it here (`web_load:application`): the project's WSGI app, plus a
    header with what this request cost inside the worker: wall ms, CPU ms, database ms, queries."""
    global _django_app
    if _django_app is None:
        from benchforge.wsgi import application as _django_app
    from django.db import connection

    database = [0.0, 0]

    def timed(execute, sql, params, many, context):
        start = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            database[0] += time.perf_counter() - start
            database[1] += 1

    answer = {}

    def hold(status, headers, exc_info=None):
        answer.update(status=status, headers=headers, exc_info=exc_info)
        return lambda data: None

    wall, cpu = time.perf_counter(), time.process_time()
    with connection.execute_wrapper(timed):
        result = _django_app(environ, hold)
        try:
            body = b"".join(result)
        finally:
            if hasattr(result, "close"):
                result.close()
    timing = (
        f"{(time.perf_counter() - wall) * 1000:.2f} {(time.process_time() - cpu) * 1000:.2f} "
        f"{database[0] * 1000:.2f} {database[1]}"
    )
    start_response(answer["status"], [*answer["headers"], (TIMING_HEADER, timing)], answer["exc_info"])
    return [body]


def _copy_text(value) -> str:
    """One value in COPY's text format."""
    if value is None:
        return r"\N"
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, dict | list):
        value = json.dumps(value)
    elif isinstance(value, datetime.datetime):
        return value.isoformat()
    value = str(value)
    return value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def copy_rows(model, rows) -> int:
    """COPY `rows` (dicts of attname -> value, ids included) into the model's table: the fastest
    way into Postgres, minutes for hundreds of thousands of rows instead of hours through services.
    Missing fields take the model's default (auto_now fields: now, nullable ones: NULL)."""
    from django.db import connection
    from django.utils import timezone

    now = timezone.now()
    fields = model._meta.concrete_fields
    defaults = {}
    for f in fields:
        if f.has_default():
            defaults[f.attname] = f.get_default()
        elif getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False):
            defaults[f.attname] = now
        elif f.null:
            defaults[f.attname] = None
        elif f.blank:
            defaults[f.attname] = ""
    buffer = io.StringIO()
    n = 0
    for row in rows:
        buffer.write("\t".join(_copy_text(row[f.attname] if f.attname in row else defaults[f.attname]) for f in fields))
        buffer.write("\n")
        n += 1
    buffer.seek(0)
    table = connection.ops.quote_name(model._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    with connection.cursor() as cursor:
        cursor.copy_expert(f"COPY {table} ({columns}) FROM STDIN", buffer)
        cursor.execute(f"SELECT setval(pg_get_serial_sequence('{model._meta.db_table}', 'id'), (SELECT max(id) FROM {table}))")
    return n


STATUS_MIX = ["draft"] * 25 + ["answered"] * 10 + ["in_review"] * 20 + ["revision"] * 5 + ["accepted"] * 35 + ["rejected"] * 5


def fill(n_items: int, n_images: int) -> dict[str, dict]:
    """Benchmark, 20 members (reviewers, who may also annotate), n_images images, n_items items
    (each with two images, two criteria, its history), open and done assignments, a closed review
    round over the decided items and an open one over the items in review (two reviewers each,
    half of the reviews given). Returns per member: session cookie, their items, their pending reviews."""
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore
    from django.core.management import call_command
    from django.db import connection, transaction
    from django.utils import timezone

    from annotation.models import Assignment, Criterion, Item, ItemImage, ItemRevision
    from benchforge.services import create_or_update_user
    from curation.models import Image
    from curation.services import load_preset
    from review.models import Review, ReviewRound, RoundItem

    started = time.monotonic()
    call_command("migrate", verbosity=0)
    benchmark = load_preset("alignmmbench", slug=SLUG)
    researcher, _ = create_or_update_user("lead", "researcher", benchmarks=[benchmark])
    people = [create_or_update_user(f"member{n:02d}", "reviewer", benchmarks=[benchmark])[0] for n in range(MEMBERS)]
    tasks = list(benchmark.tasks.all())
    now = timezone.now()
    rng = random.Random(7)
    counts: dict[str, int] = {}
    with transaction.atomic():
        counts["images"] = copy_rows(
            Image,
            (
                dict(
                    id=n,
                    benchmark_id=benchmark.pk,
                    file=f"images/load/{n}.jpg",
                    sha256=f"{n:064x}",
                    md5=f"{n:032x}",
                    phash=n,
                    dhash=n,
                    width=1024,
                    height=768,
                    format="JPEG",
                    file_size=100_000,
                    status="accepted",
                    collected_at=now,
                )
                for n in range(1, n_images + 1)
            ),
        )
        statuses = [rng.choice(STATUS_MIX) for _ in range(n_items + 1)]
        kinds = ("single_turn", "single_turn", "multi_turn", "mcq")
        history = [{"role": "user", "content": "Describe it."}, {"role": "assistant", "content": "A street market. " * 5}]

        def item_row(n: int) -> dict:
            kind = kinds[n % 4]
            author = people[n % MEMBERS].pk
            return dict(
                id=n,
                benchmark_id=benchmark.pk,
                task_id=tasks[n % len(tasks)].pk,
                kind=kind,
                question=f"Question {n}: what is shown in the image? " * 3,
                history=history if kind == "multi_turn" else [],
                choices=["one", "two", "three", "four"] if kind == "mcq" else [],
                answer="B" if kind == "mcq" else "",
                reference_answer="A detailed reference answer. " * 20,
                description="A long description. " * 10,
                author_id=author,
                assignee_id=author,
                status=statuses[n],
                version=1 if statuses[n] == "draft" else 2,
                created_at=now - datetime.timedelta(days=90),
                updated_at=now - datetime.timedelta(minutes=n % 5000),
                submitted_at=None if statuses[n] == "draft" else now - datetime.timedelta(hours=n % 1440),
            )

        counts["items"] = copy_rows(Item, (item_row(n) for n in range(1, n_items + 1)))
        counts["item images"] = copy_rows(
            ItemImage,
            (
                dict(id=2 * n - 1 + k, item_id=n, image_id=(2 * n - 2 + k) % n_images + 1, order=k)
                for n in range(1, n_items + 1)
                for k in (0, 1)
            ),
        )
        counts["criteria"] = copy_rows(
            Criterion,
            (
                dict(id=2 * n - 1 + k, item_id=n, order=k + 1, kind="soft", text=f"criterion {k + 1}")
                for n in range(1, n_items + 1)
                for k in (0, 1)
            ),
        )

        def revisions():
            rid = 0
            for n in range(1, n_items + 1):
                author = people[n % MEMBERS].pk
                rid += 1
                yield dict(id=rid, item_id=n, version=1, snapshot={}, action="created", changed_by_id=author, changed_at=now)
                if statuses[n] != "draft":  # submitted some time in the last 60 days (the dashboard's progress bars)
                    rid += 1
                    yield dict(
                        id=rid,
                        item_id=n,
                        version=2,
                        snapshot={},
                        action="submitted",
                        changed_by_id=author,
                        changed_at=now - datetime.timedelta(hours=n % 1440),
                    )

        counts["revisions"] = copy_rows(ItemRevision, revisions())
        open_items: dict[int, list[int]] = {}
        for n in range(1, n_items + 1):
            if statuses[n] == "draft" and len(open_items.setdefault(n % MEMBERS, [])) < OPEN_PER_MEMBER:
                open_items[n % MEMBERS].append(n)
        open_set = {n for ns in open_items.values() for n in ns}

        def assignments():
            for n in range(1, n_items + 1):
                if statuses[n] == "draft" and n not in open_set:
                    continue
                yield dict(
                    id=n,
                    benchmark_id=benchmark.pk,
                    assignee_id=people[n % MEMBERS].pk,
                    task_id=tasks[n % len(tasks)].pk,
                    item_id=n,
                    status="open" if n in open_set else "done",
                    assigned_by_id=researcher.pk,
                    created_at=now - datetime.timedelta(days=30, seconds=-n),
                    done_at=None if n in open_set else now,
                )

        counts["assignments"] = copy_rows(Assignment, assignments())

        # Review: round 1 (closed) decided every item past review; round 2 (open) holds the items in review.
        decided = [n for n in range(1, n_items + 1) if statuses[n] in ("accepted", "revision", "rejected")]
        in_review = [n for n in range(1, n_items + 1) if statuses[n] == "in_review"]
        rounds = {
            1: ReviewRound.objects.create(
                benchmark=benchmark,
                number=1,
                rule="majority",
                reviewers_per_item=2,
                status="closed",
                created_by=researcher,
                closed_by=researcher,
                closed_at=now,
            ),
            2: ReviewRound.objects.create(
                benchmark=benchmark, number=2, rule="majority", reviewers_per_item=2, status="open", created_by=researcher
            ),
        }
        verdict_of = {"accepted": "accept", "revision": "revision", "rejected": "reject"}
        entries, reviews = [], []
        pending: dict[int, list[int]] = {}
        for number, members in ((1, decided), (2, in_review)):
            for n in members:
                entry_id = len(entries) + 1
                outcome = {"accepted": "accepted", "revision": "revision", "rejected": "rejected"}.get(statuses[n], "")
                entries.append(
                    dict(
                        id=entry_id,
                        round_id=rounds[number].pk,
                        item_id=n,
                        version=2,
                        outcome=outcome,
                        decided_at=now if outcome else None,
                    )
                )
                for k in (1, 2):  # two reviewers, never the author
                    reviewer = (n + k) % MEMBERS
                    done = number == 1 or (n + k) % 2 == 0
                    verdict = verdict_of[statuses[n]] if number == 1 else ("accept" if n % 3 else "revision")
                    if number == 1 and k == 2 and n % 7 == 0:
                        verdict = "accept" if verdict != "accept" else "revision"  # some disagreement
                    reviews.append(
                        dict(
                            id=len(reviews) + 1,
                            round_id=rounds[number].pk,
                            entry_id=entry_id,
                            item_id=n,
                            reviewer_id=people[reviewer].pk,
                            assigned_at=now - datetime.timedelta(days=10, seconds=-n),
                            verdict=verdict if done else "",
                            reasons=["incomplete"] if done and verdict != "accept" else [],
                            comment="",
                            item_version=2 if done else None,
                            submitted_at=now - datetime.timedelta(days=5, seconds=-n) if done else None,
                        )
                    )
                    if not done:
                        pending.setdefault(reviewer, []).append(len(reviews))
        counts["round entries"] = copy_rows(RoundItem, entries)
        counts["reviews"] = copy_rows(Review, reviews)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")  # fresh planner statistics and visibility map, as autovacuum gives a live database

    backend = next(path for path in settings.AUTHENTICATION_BACKENDS if "axes" not in path)  # axes only guards logins
    clients = {}
    for k, person in enumerate(people):
        session = SessionStore()
        session[SESSION_KEY] = str(person.pk)
        session[BACKEND_SESSION_KEY] = backend
        session[HASH_SESSION_KEY] = person.get_session_auth_hash()
        session.create()
        clients[person.username] = {
            "cookie": session.session_key,
            "items": list(range(k or MEMBERS, n_items + 1, MEMBERS))[:2000],  # their items: ids n with n % MEMBERS == k
            # Complete drafts in their queue: what --writes submits and takes back.
            "drafts": open_items.get(k, [])[:20],
            "username": person.username,
            "tasks": [t.slug for t in tasks],
            "top": n_items,
        }
    print(
        "filled in {:.0f} s: {} (load average {})".format(
            time.monotonic() - started,
            ", ".join(f"{n} {name}" for name, n in counts.items()),
            ", ".join(f"{x:.1f}" for x in os.getloadavg()),
        ),
        flush=True,
    )
    return clients


def cpu_seconds(pids) -> dict[int, float]:
    """user + system CPU time of each of these processes so far (Linux /proc)."""
    times = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        times[pid] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
    return times


def cpu_spent(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds spent between two readings by the processes alive at the second (Postgres
    backends come and go with the workers' connections: a vanished one's time is lost, never negative)."""
    return sum(t - before.get(pid, 0.0) for pid, t in after.items())


def server_pids(gunicorn_pid: int, database: str) -> tuple[list[int], list[int]]:
    """gunicorn master + workers, and the Postgres backends serving our database."""
    workers, backends = [gunicorn_pid], []
    for entry in Path("/proc").iterdir():
        if not re.fullmatch(r"[0-9]+", entry.name):
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == gunicorn_pid:
            workers.append(int(entry.name))
        elif cmdline.startswith("postgres:") and f" {database} " in cmdline:
            backends.append(int(entry.name))
    return workers, backends


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def _cursor(values: list) -> str:
    """A keyset cursor as the pages' links carry it (benchforge.paging.encode_cursor)."""
    return base64.urlsafe_b64encode(json.dumps(values, separators=(",", ":")).encode()).decode().rstrip("=")


def _top(info: dict) -> int:
    """The highest item id (a session file kept by an older run has no "top": its members' items tell)."""
    return info.get("top") or max(info["items"])


def page_path(page: str, info: dict, rng: random.Random) -> str:
    # Deeper pages as a member reaches them, following "next" (keyset: ?after=<the last row's sort values>).
    if page == "review queue":
        deeper = f"?after={_cursor([2, rng.randint(1, _top(info)), 0])}"  # round 2 (the open one), past an item
        return f"/b/{SLUG}/review/queue/" + ("" if rng.random() < 0.8 else deeper)
    if page == "items list":
        choice = rng.random()
        if choice < 0.4:
            query = ""
        elif choice < 0.6:
            query = f"?status={rng.choice(['draft', 'answered', 'in_review', 'accepted', 'rejected'])}"
        elif choice < 0.75:
            query = f"?task={rng.choice(info['tasks'])}"
        elif choice < 0.85:
            query = f"?author={info['username']}&status=draft"
        else:
            query = f"?after={_cursor([rng.randint(1, _top(info))])}"
        return f"/b/{SLUG}/items/{query}"
    if page == "queue":
        return f"/b/{SLUG}/queue/"
    if page == "editor":
        return f"/b/{SLUG}/items/{rng.choice(info['items'])}/"
    return f"/b/{SLUG}/"


WRITE = "write"  # what --writes measures beside the pages (no budget of its own)


def load(
    port: int, clients: dict, n_clients: int, seconds: float, on_start=lambda: None, writes: float = 0.0
) -> tuple[dict[str, list[tuple]], int]:
    """Per page: (client ms, server wall ms, server CPU ms, database ms, queries) per request; and
    how many requests failed. With `writes`, that share of each client's requests are writes that
    change what waits for the team: a submit of one of their drafts (the API's), then taking it
    back (the editor's withdraw), in turn, so a kept world ends as it began."""
    timings: dict[str, list[tuple]] = {page: [] for page in PAGES}
    timings[WRITE] = []
    errors: list[str] = []
    lock = threading.Lock()
    names = sorted(clients)[:n_clients]
    warmed = threading.Barrier(len(names) + 1)
    go = threading.Event()
    stop = 0.0

    def request(path: str, cookie: str, method: str = "GET", body: str = "", headers=None) -> tuple[int, list[float], dict]:
        # http.client, not httpx: the clients share the 2 cores with the server, so keep them cheap.
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            conn.request(method, path, body=body or None, headers={"Cookie": cookie, **(headers or {})})
            resp = conn.getresponse()
            data = resp.read()
            seen = {"csrftoken": re.search(r"csrftoken=([^;]+)", " ".join(resp.msg.get_all("Set-Cookie") or [])), "body": data}
            return resp.status, [float(x) for x in (resp.getheader(TIMING_HEADER) or "0 0 0 0").split()], seen
        finally:
            conn.close()

    def write(info: dict, state: dict) -> tuple[str, int, list[float]]:
        """The client's next write: submit its draft through the API, or take it back in the editor."""
        item, csrf = state["item"], state["csrf"]
        headers = {"X-CSRFToken": csrf}
        if not state["submitted"]:
            path = f"/api/v1/benchmarks/{SLUG}/items/{item}/submit/"
            body, headers["Content-Type"] = json.dumps({"version": state["version"]}), "application/json"
        else:
            path = f"/b/{SLUG}/items/{item}/withdraw/"
            body, headers["Content-Type"] = f"version={state['version']}", "application/x-www-form-urlencoded"
        status, server, seen = request(path, state["cookie"], "POST", body, headers)
        if status < 400:
            state["submitted"] = not state["submitted"]
            state["version"] += 1  # a submit and a withdraw each make one version
        return path, status, server

    def warm_up(info: dict, rng: random.Random, cookie: str) -> dict | None:
        """Each page once; with --writes, the client's draft and CSRF token (what its writes send)."""
        state = None
        for page in PAGES:
            _, _, seen = request(page_path(page, info, rng), cookie)
            if writes and state is None and seen["csrftoken"]:
                csrf = seen["csrftoken"][1]
                if not info.get("drafts"):
                    raise RuntimeError("--writes needs a world filled by this version of the bench (its members' drafts)")
                state = {"item": info["drafts"][0], "csrf": csrf, "cookie": f"{cookie}; csrftoken={csrf}", "submitted": False}
                editor = request(f"/b/{SLUG}/items/{state['item']}/", cookie)
                found = re.search(rb'name="version"[^>]*value="(\d+)"', editor[2]["body"])
                if found is None:
                    raise RuntimeError(
                        f"no version in the editor of item {state['item']}: HTTP {editor[0]} {editor[2]['body'][:300]!r}"
                    )
                state["version"] = int(found[1])
        return state

    def run(username: str) -> None:
        rng = random.Random(username)
        info = clients[username]
        cookie = f"sessionid={info['cookie']}"
        try:
            state = warm_up(info, rng, cookie)
        except Exception:
            warmed.abort()  # the run cannot start: every thread and the main one stop waiting
            raise
        warmed.wait()
        go.wait()
        turn = rng.randrange(len(PAGES))
        while time.monotonic() < stop:
            if state is not None and rng.random() < writes:
                start = time.perf_counter()
                path, status, server = write(info, state)
                page = WRITE
            else:
                page = PAGES[turn % len(PAGES)]
                path = page_path(page, info, rng)
                start = time.perf_counter()
                status, server, _ = request(path, cookie)
                turn += 1
            elapsed = (time.perf_counter() - start) * 1000
            with lock:
                if status >= 400 or (page != WRITE and status != 200):
                    errors.append(f"{path}: HTTP {status}")
                else:
                    timings[page].append((elapsed, *server))
        if state is not None and state["submitted"]:  # leave the world as it was found
            write(info, state)

    threads = [threading.Thread(target=run, args=(name,)) for name in names]
    for t in threads:
        t.start()
    warmed.wait()  # every client warmed up: measure from here
    on_start()
    stop = time.monotonic() + seconds
    go.set()
    for t in threads:
        t.join()
    if errors:
        print(f"{len(errors)} failed requests, e.g. {errors[:3]}")
    return timings, len(errors)


def report(timings: dict[str, list[tuple]]) -> bool:
    ok = True
    for page, rows in timings.items():
        if page == WRITE:
            if rows:
                print(
                    f"{page:>12}: n={len(rows):5d}  CPU per request {statistics.mean(r[2] for r in rows):5.1f} ms (no budget)"
                    f"  client p50 {statistics.median(r[0] for r in rows):6.1f}  p95 {percentile([r[0] for r in rows], 95):6.1f} ms"
                    f" | mean db {statistics.mean(r[3] for r in rows):5.1f} ms"
                )
            continue
        if not rows:
            print(f"{page:>12}: no successful request")
            ok = False
            continue
        client = [r[0] for r in rows]
        wall = [r[1] for r in rows]
        cpu = statistics.mean(r[2] for r in rows)
        p95 = percentile(client, 95)
        within = cpu <= BUDGET_MS[page] and p95 < P95_TARGET_MS
        ok &= within
        print(
            f"{page:>12}: n={len(rows):5d}  CPU per request {cpu:5.1f} ms (budget {BUDGET_MS[page]:.0f})"
            f"  client p50 {statistics.median(client):6.1f}  p95 {p95:6.1f}  p99 {percentile(client, 99):6.1f}"
            f"  max {max(client):6.1f} ms {'ok ' if within else 'OVER'}| server wall p50 {statistics.median(wall):5.1f}"
            f" p95 {percentile(wall, 95):6.1f} ms, mean db {statistics.mean(r[3] for r in rows):5.1f} ms,"
            f" queries {int(min(r[4] for r in rows))}-{int(max(r[4] for r in rows))}"
        )
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--images", type=int, default=200_000)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=60)
    # One sync worker per core did best at 5,000 items (2: p95 224 ms, 3: 232 ms, 4: 243 ms in one quiet window);
    # at 100,000 items on a busy machine 4 did better (39 req/s against 30 with 2, load average 5-8).
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--writes",
        type=float,
        default=0.0,
        help="share of each client's requests that are writes changing what waits (a submit, then its withdraw), e.g. 0.05",
    )
    parser.add_argument("--keep", action="store_true", help="keep the database (its name is printed) for EXPLAIN")
    parser.add_argument(
        "--database",
        help="serve a database filled and kept by bench/web_profile.py --keep (its members' sessions beside it), no fill",
    )
    args = parser.parse_args()

    name = args.database or f"bf_webload_{os.getpid()}"
    try:
        if not args.database:
            admin(f'CREATE DATABASE "{name}"')
    except psycopg2.OperationalError as exc:
        print(f"SKIPPED: this benchmark needs Postgres (BENCH_POSTGRES_URL={ADMIN_URL}): {str(exc).strip()}")
        return 0
    env = dict(
        os.environ,
        DATABASE_URL=database_url(name),
        DJANGO_SETTINGS_MODULE="benchforge.settings",
        DEBUG="false",
        SECRET_KEY=f"bench-web-profile-{name}-" * 2 if args.database else secrets.token_urlsafe(40),
        ALLOWED_HOSTS="127.0.0.1",
        DB_CONN_MAX_AGE="60",
        LOG_LEVEL="WARNING",
        BENCHFORGE_SSL_REDIRECT="0",  # plain http on the loopback: no redirect to https
    )
    shared_cache = empty_redis(CACHE_URL)
    if shared_cache:
        env["CACHE_URL"] = CACHE_URL
    else:
        print(f"no Redis at {CACHE_URL}: each web process keeps its own cache")
    os.environ.update(env)
    server = None
    try:
        if args.database:
            import django

            django.setup()
            clients = json.loads(Path(f"/tmp/{name}.sessions.json").read_text())
        else:
            clients = fill(args.items, args.images)
        before = ", ".join(f"{x:.2f}" for x in os.getloadavg())  # other work on the machine skews the numbers
        app_folder = ["--pythonpath", str(Path(__file__).resolve().parent), "--worker-class", "sync", "--log-level", "warning"]
        app_folder += ["--timeout", "120"]  # a worker's first request imports the app: slow on a loaded machine
        server, port = serve("web_load:application", env, workers=args.workers, options=app_folder)
        cpu_before = {}
        timings, failed = load(
            port,
            clients,
            args.clients,
            args.seconds,
            on_start=lambda: cpu_before.update(zip(("web", "db"), map(cpu_seconds, server_pids(server.pid, name)))),
            writes=args.writes,
        )
        after = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        workers, backends = server_pids(server.pid, name)
        total = sum(len(v) for v in timings.values())
        web_ms = 1000 * cpu_spent(cpu_before.get("web", {}), cpu_seconds(workers)) / max(total, 1)
        db_ms = 1000 * cpu_spent(cpu_before.get("db", {}), cpu_seconds(backends)) / max(total, 1)
        print(
            f"gunicorn {args.workers} sync workers, {args.clients} clients, {args.seconds:.0f} s, {os.cpu_count()} CPUs, "
            f"load average before {before}, after {after}: {total} requests, {total / args.seconds:.0f} req/s"
            + (f", {len(timings[WRITE])} of them writes" if args.writes else "")
        )
        print("times in ms; client = as the clients saw it (queueing for a worker included); server = inside the worker")
        ok = report(timings) and not failed
        print(
            f"server CPU per request: {web_ms:.1f} ms in gunicorn workers + {db_ms:.1f} ms in Postgres "
            f"(so at most ~{(os.cpu_count() or 1) * 1000 / max(web_ms + db_ms, 0.1):.0f} req/s on this machine if nothing else ran)"
        )
        print("every page within its budget" if ok else "BUDGET MISSED (CPU per request or p95 over, or failed requests)")
        return 0 if ok else 1
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        from django.db import connections

        connections.close_all()
        if shared_cache:
            empty_redis(CACHE_URL)
        if args.keep or args.database:
            print(f'kept database {name}: DROP DATABASE "{name}" when done')
        else:
            admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    sys.exit(main())
