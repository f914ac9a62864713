"""Where a page's milliseconds go: each of web_load's five pages rendered in this process under
cProfile, with the CPU time (process time, not wall time: the machine is shared) per request.

Run: .venv/bin/python bench/web_profile.py [--items 100000] [--requests 40] [--top 25] [--after-write | --writes]
     [--keep | --database NAME]

Fills a throwaway Postgres database as bench/web_load.py does (same world: same members, items,
reviews), then asks each page --requests times through Django's test client (DEBUG off, the shared
Redis cache of BENCH_CACHE_URL when it answers). Prints, per page, the mean CPU per request without
the profiler, then the profiler's top functions by own time and by cumulative time. --keep keeps the
database (and writes the members' sessions beside it) so the next run can pass --database NAME and
skip the fill. --after-write asks each page right after a submit or a verdict (what the benchmark keeps
of its work dropped first), as a team at work mostly finds it; web_load.py --writes measures the same
under load. --writes profiles the writes of web_load.py --writes themselves (each member's submit
through the API, then its withdraw in the editor) instead of the pages.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import random
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench.support.throwaway import admin, database_url  # noqa: E402
from bench.support.web import empty_redis  # noqa: E402

CACHE_URL = os.environ.get("BENCH_CACHE_URL", "redis://127.0.0.1:6379/14")


def _sessions_file(name: str) -> Path:
    return Path(f"/tmp/{name}.sessions.json")


def measure(clients: dict, requests: int, top: int, profile: bool, dump: str = "", after_write: bool = False) -> dict[str, float]:
    import web_load
    from django.test import Client

    from benchforge import navigation
    from curation.models import Benchmark

    benchmark_id = Benchmark.objects.get(slug=web_load.SLUG).pk
    browsers = {name: Client() for name in clients}
    for name, browser in browsers.items():
        browser.cookies["sessionid"] = clients[name]["cookie"]
    names = sorted(clients)
    cpu: dict[str, float] = {}
    for page in web_load.PAGES:
        rng = random.Random(page)
        for name in names:  # warm up (templates, translations, each member's cached counts)
            assert browsers[name].get(web_load.page_path(page, clients[name], rng)).status_code == 200
        times = []
        profiler = cProfile.Profile(time.process_time) if profile else None  # CPU, not wall: the machine is shared
        for n in range(requests):
            name = names[n % len(names)]
            path = web_load.page_path(page, clients[name], rng)
            if after_write:  # as a submit or a verdict in the benchmark leaves it: what its work changes is dropped
                navigation.changed(benchmark_id)
            start = time.process_time()
            if profiler:
                profiler.enable()
            response = browsers[name].get(path)
            if profiler:
                profiler.disable()
            times.append((time.process_time() - start) * 1000)
            assert response.status_code == 200, (path, response.status_code)
        cpu[page] = statistics.mean(times)
        print(f"\n=== {page}: mean CPU {cpu[page]:.2f} ms per request (median {statistics.median(times):.2f}, n={requests})")
        if profiler and dump:
            Path(dump).mkdir(parents=True, exist_ok=True)
            profiler.dump_stats(Path(dump) / f"{page.replace(' ', '_')}.prof")
        if profiler:
            for order in ("tottime", "cumulative"):
                out = io.StringIO()
                stats = pstats.Stats(profiler, stream=out)
                stats.strip_dirs().sort_stats(order).print_stats(top)
                text = out.getvalue()
                print(text[text.find("   ncalls") :])
    return cpu


def measure_writes(clients: dict, requests: int, top: int, profile: bool, dump: str = "") -> dict[str, float]:
    """What a write costs itself: web_load's two writes (a member submits one of their drafts through
    the API, then takes it back in the editor), each `requests` times in turn over the members, in
    this process, so a kept world ends as it began."""
    import web_load
    from django.test import Client

    from annotation.models import Item

    names = sorted(name for name in clients if clients[name].get("drafts"))
    if not names:
        raise SystemExit("--writes needs a world filled by this version of the bench (its members' drafts)")
    browsers = {name: Client() for name in names}
    for name, browser in browsers.items():
        browser.cookies["sessionid"] = clients[name]["cookie"]
    kinds = {
        "submit": lambda item, version: (
            f"/api/v1/benchmarks/{web_load.SLUG}/items/{item}/submit/",
            {"data": json.dumps({"version": version}), "content_type": "application/json"},
        ),
        "withdraw": lambda item, version: (f"/b/{web_load.SLUG}/items/{item}/withdraw/", {"data": {"version": version}}),
    }
    times: dict[str, list[float]] = {kind: [] for kind in kinds}
    profilers = {kind: cProfile.Profile(time.process_time) for kind in kinds} if profile else {}
    for n in range(requests + 1):  # the first pair warms up
        name = names[n % len(names)]
        item = clients[name]["drafts"][0]
        for kind, request in kinds.items():
            path, arguments = request(item, Item.objects.values_list("version", flat=True).get(pk=item))
            profiler = profilers.get(kind) if n else None
            start = time.process_time()
            if profiler:
                profiler.enable()
            response = browsers[name].post(path, **arguments)
            if profiler:
                profiler.disable()
            if n:
                times[kind].append((time.process_time() - start) * 1000)
            assert response.status_code < 400, (path, response.status_code, response.content[:300])
    cpu = {}
    for kind, taken in times.items():
        cpu[kind] = statistics.mean(taken)
        print(f"\n=== {kind}: mean CPU {cpu[kind]:.2f} ms per write (median {statistics.median(taken):.2f}, n={requests})")
        if kind in profilers:
            if dump:
                Path(dump).mkdir(parents=True, exist_ok=True)
                profilers[kind].dump_stats(Path(dump) / f"{kind}.prof")
            for order in ("tottime", "cumulative"):
                out = io.StringIO()
                pstats.Stats(profilers[kind], stream=out).strip_dirs().sort_stats(order).print_stats(top)
                text = out.getvalue()
                print(text[text.find("   ncalls") :])
    return cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--images", type=int, default=None, help="default: twice --items")
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--no-profile", action="store_true", help="CPU per request only")
    parser.add_argument(
        "--after-write",
        action="store_true",
        help="each request right after a submit or verdict (what the benchmark keeps of its work is dropped first)",
    )
    parser.add_argument(
        "--writes", action="store_true", help="the writes of web_load --writes (a submit, then its withdraw) instead of the pages"
    )
    parser.add_argument("--dump", default="", help="a folder to write each page's profile to (<page>.prof)")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--database", help="a database kept by an earlier --keep run (no fill)")
    args = parser.parse_args()

    name = args.database or f"bf_webprofile_{os.getpid()}"
    if not args.database:
        admin(f'CREATE DATABASE "{name}"')
    os.environ.update(
        DATABASE_URL=database_url(name),
        DJANGO_SETTINGS_MODULE="benchforge.settings",
        DEBUG="false",
        SECRET_KEY=f"bench-web-profile-{name}-" * 2,  # the same for a --database rerun: its sessions stay valid
        ALLOWED_HOSTS="testserver,127.0.0.1",
        LOG_LEVEL="WARNING",
        BENCHFORGE_SSL_REDIRECT="0",
    )
    if empty_redis(CACHE_URL):
        os.environ["CACHE_URL"] = CACHE_URL
    import web_load

    try:
        if args.database:
            import django

            django.setup()
            clients = json.loads(_sessions_file(name).read_text())
        else:
            clients = web_load.fill(args.items, args.images or 2 * args.items)
            _sessions_file(name).write_text(json.dumps(clients))
        if args.writes:
            measure_writes(clients, args.requests, args.top, not args.no_profile, args.dump)
        else:
            measure(clients, args.requests, args.top, not args.no_profile, args.dump, args.after_write)
    finally:
        from django.db import connections

        connections.close_all()
        if args.keep or args.database:
            print(f'kept database {name}: DROP DATABASE "{name}" when done')
        else:
            admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            _sessions_file(name).unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
