"""Web load: the queue page and the item editor under 20 concurrent annotators, on Postgres.

Run: .venv/bin/python bench/web_load.py [--items 5000] [--clients 20] [--seconds 30] [--workers 2]

It creates a throwaway Postgres database (dropped at the end), fills it with a benchmark of
--items items (20 annotators, each with open assignments), serves the app with gunicorn
(--workers sync processes, DEBUG off) and runs --clients closed-loop clients in threads, each
logged in as its own annotator, alternating its queue page and the editor of one of its items,
with no think time. Prints p50/p95/p99 per page (target: p95 < 200 ms on a 2-core machine).

Admin connection: BENCH_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/postgres).
"""

from __future__ import annotations

import argparse
import http.client
import os
import random
import secrets
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
import psycopg2

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

ADMIN_URL = os.environ.get("BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")
SLUG = "load"
ANNOTATORS = 20
OPEN_PER_ANNOTATOR = 60


def database_url(name: str) -> str:
    parts = urlsplit(ADMIN_URL)
    return urlunsplit(parts._replace(path=f"/{name}"))


def admin(sql: str) -> None:
    conn = psycopg2.connect(ADMIN_URL)
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
    finally:
        conn.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fill(n_items: int) -> dict[str, dict]:
    """Benchmark, users, images, items (each with images, criteria, history), assignments.
    Returns per annotator: session cookie and the ids of the items they can open."""
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore
    from django.core.management import call_command
    from django.db import connection

    from annotation.models import Assignment, Criterion, Item, ItemImage, ItemRevision
    from benchforge.services import create_or_update_user
    from curation.models import Image
    from curation.services import load_preset

    call_command("migrate", verbosity=0)
    benchmark = load_preset("alignmmbench", slug=SLUG)
    researcher, _ = create_or_update_user("lead", "researcher", benchmarks=[benchmark])
    people = [create_or_update_user(f"annotator{n:02d}", "annotator", benchmarks=[benchmark])[0] for n in range(ANNOTATORS)]
    tasks = list(benchmark.tasks.all())
    images = Image.objects.bulk_create(
        [
            Image(
                benchmark=benchmark,
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
            )
            for n in range(max(1, n_items // 5))
        ]
    )
    rng = random.Random(7)
    items = []
    for n in range(n_items):
        kind = ("single_turn", "single_turn", "multi_turn", "mcq")[n % 4]
        items.append(
            Item(
                benchmark=benchmark,
                task=tasks[n % len(tasks)],
                kind=kind,
                question=f"Question {n}: what is shown in the image? " * 3,
                history=[{"role": "user", "content": "Describe it."}, {"role": "assistant", "content": "A street market." * 5}]
                if kind == "multi_turn"
                else [],
                choices=["one", "two", "three", "four"] if kind == "mcq" else [],
                answer="B" if kind == "mcq" else "",
                reference_answer="A detailed reference answer. " * 20,
                description="A long description. " * 10,
                author=people[n % ANNOTATORS],
                assignee=people[n % ANNOTATORS],
                status=rng.choice(["draft", "draft", "answered", "accepted"]),
            )
        )
    Item.objects.bulk_create(items, batch_size=1000)
    ItemImage.objects.bulk_create(
        [ItemImage(item=item, image=images[n % len(images)], order=0) for n, item in enumerate(items)], batch_size=2000
    )
    Criterion.objects.bulk_create(
        [Criterion(item=item, order=k, kind="soft", text=f"criterion {k}") for item in items for k in (1, 2)], batch_size=2000
    )
    ItemRevision.objects.bulk_create(
        [ItemRevision(item=item, version=1, snapshot={}, action="created", changed_by=item.author) for item in items],
        batch_size=2000,
    )
    by_person: dict[int, list[Item]] = {}
    for item in items:
        by_person.setdefault(item.author_id, []).append(item)
    assignments = []
    for person in people:
        drafts = [i for i in by_person[person.pk] if i.status == "draft"][:OPEN_PER_ANNOTATOR]
        assignments += [
            Assignment(benchmark=benchmark, assignee=person, task=i.task, item=i, assigned_by=researcher) for i in drafts
        ]
    Assignment.objects.bulk_create(assignments)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # fresh planner statistics, as autovacuum would give a live database

    clients = {}
    for person in people:
        session = SessionStore()
        session[SESSION_KEY] = str(person.pk)
        session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
        session[HASH_SESSION_KEY] = person.get_session_auth_hash()
        session.create()
        clients[person.username] = {"cookie": session.session_key, "items": [i.pk for i in by_person[person.pk]]}
    print(
        f"filled: {Item.objects.count()} items, {Image.objects.count()} images, {Assignment.objects.count()} open assignments, "
        f"{len(people)} annotators"
    )
    return clients


def serve(port: int, workers: int, env: dict) -> subprocess.Popen:
    gunicorn = Path(sys.executable).with_name("gunicorn")
    proc = subprocess.Popen(
        [
            str(gunicorn),
            "benchforge.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--worker-class",
            "sync",
            "--log-level",
            "warning",
        ],
        cwd=REPO,
        env=env,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/accounts/login/", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    proc.terminate()
    raise SystemExit("gunicorn did not come up within 60 s")


def cpu_seconds(pids) -> float:
    """user + system CPU time of these processes so far (Linux /proc)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


def server_pids(gunicorn_pid: int, database: str) -> tuple[list[int], list[int]]:
    """gunicorn master + workers, and the Postgres backends serving our database."""
    workers, backends = [gunicorn_pid], []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
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


def load(port: int, clients: dict, n_clients: int, seconds: float, on_start=lambda: None) -> dict[str, list[float]]:
    timings: dict[str, list[float]] = {"queue": [], "editor": []}
    errors: list[str] = []
    lock = threading.Lock()
    names = sorted(clients)[:n_clients]
    warmed = threading.Barrier(len(names) + 1)
    go = threading.Event()
    stop = 0.0

    def get(path: str, cookie: str) -> int:
        # http.client, not httpx: the clients share the 2 cores with the server, so keep them cheap.
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            conn.request("GET", path, headers={"Cookie": f"sessionid={cookie}"})
            resp = conn.getresponse()
            resp.read()
            return resp.status
        finally:
            conn.close()

    def run(username: str) -> None:
        rng = random.Random(username)
        info = clients[username]
        for path in (f"/b/{SLUG}/queue/", f"/b/{SLUG}/items/{info['items'][0]}/"):  # warm up
            get(path, info["cookie"])
        warmed.wait()
        go.wait()
        turn = 0
        while time.monotonic() < stop:
            page = "queue" if turn % 2 == 0 else "editor"
            path = f"/b/{SLUG}/queue/" if page == "queue" else f"/b/{SLUG}/items/{rng.choice(info['items'])}/"
            start = time.perf_counter()
            status = get(path, info["cookie"])
            elapsed = (time.perf_counter() - start) * 1000
            with lock:
                if status != 200:
                    errors.append(f"{path}: HTTP {status}")
                else:
                    timings[page].append(elapsed)
            turn += 1

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
    return timings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=5000)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=30)
    # One sync worker per core did best here (2: p95 224 ms, 3: 232 ms, 4: 243 ms in one quiet window).
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    name = f"bf_webload_{os.getpid()}"
    try:
        admin(f'CREATE DATABASE "{name}"')
    except psycopg2.OperationalError as exc:
        print(f"SKIPPED: this benchmark needs Postgres (BENCH_POSTGRES_URL={ADMIN_URL}): {str(exc).strip()}")
        return 0
    env = dict(
        os.environ,
        DATABASE_URL=database_url(name),
        DJANGO_SETTINGS_MODULE="benchforge.settings",
        DEBUG="false",
        SECRET_KEY=secrets.token_urlsafe(40),
        ALLOWED_HOSTS="127.0.0.1",
        DB_CONN_MAX_AGE="60",
        LOG_LEVEL="WARNING",
    )
    os.environ.update(env)
    server = None
    try:
        clients = fill(args.items)
        port = free_port()
        before = ", ".join(f"{x:.1f}" for x in os.getloadavg())  # other work on the machine skews the numbers
        server = serve(port, args.workers, env)
        cpu_before = {}
        timings = load(
            port,
            clients,
            args.clients,
            args.seconds,
            on_start=lambda: cpu_before.update(zip(("web", "db"), map(cpu_seconds, server_pids(server.pid, name)))),
        )
        workers, backends = server_pids(server.pid, name)
        total = sum(len(v) for v in timings.values())
        web_ms = 1000 * (cpu_seconds(workers) - cpu_before.get("web", 0)) / max(total, 1)
        db_ms = 1000 * (cpu_seconds(backends) - cpu_before.get("db", 0)) / max(total, 1)
        print(
            f"gunicorn {args.workers} sync workers, {args.clients} clients, {args.seconds:.0f} s, {os.cpu_count()} CPUs "
            f"(load average before the run: {before}): {total} requests, {total / args.seconds:.0f} req/s"
        )
        ok = True
        for page, values in timings.items():
            if not values:
                print(f"{page:>6}: no successful request")
                ok = False
                continue
            p95 = percentile(values, 95)
            ok &= p95 < 200
            print(
                f"{page:>6}: n={len(values):5d}  p50 {statistics.median(values):6.1f} ms  p95 {p95:6.1f} ms  "
                f"p99 {percentile(values, 99):6.1f} ms  max {max(values):6.1f} ms  (target p95 < 200 ms)"
            )
        print(
            f"server CPU per request: {web_ms:.1f} ms in gunicorn workers + {db_ms:.1f} ms in Postgres "
            f"(so at most ~{(os.cpu_count() or 1) * 1000 / max(web_ms + db_ms, 0.1):.0f} req/s on this machine if nothing else ran)"
        )
        print("target met" if ok else "TARGET MISSED")
        return 0 if ok else 1
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        from django.db import connections

        connections.close_all()
        admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    sys.exit(main())
