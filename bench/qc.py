"""QC at scale: a text-only run on Celery workers, and an MMBench TSV import.

Run: .venv/bin/python bench/qc.py [--items 1000] [--concurrency 32] [--latency 0.1] [--workers 2] [--rows 10000]

It creates a throwaway Postgres database (dropped at the end), serves the loopback LLM server in
this process with --latency seconds per reply, and declares three models (llm-a, llm-b, llm-c) on
one remote endpoint, so they share one max_concurrency = --concurrency bound (held in Redis across
the workers; replies are cached in Redis too). Then:

  1. a text-only QC run over --items four-option items, split into one part job per Celery worker.
     Each model "knows" a seeded share of the items (60%, 45%, 30%) and answers the rest wrongly.
     Printed: calls made against the calls without early stopping (items x 4 passes x 3 models),
     the most requests in flight, and the wall time against the ideal for the calls made
     (calls made / concurrency x latency; target: within 1.3x);
  2. an MMBench TSV of --rows rows with a small JPEG each (every fifth row shares the image of the
     row before it, as MMBench files do; every tenth has two circular copies), imported in this
     process: rows per second and the peak resident memory against the file's size.

Connections: BENCH_POSTGRES_URL (admin, default postgres://postgres@127.0.0.1:5432/postgres),
BENCH_REDIS_URL (default redis://127.0.0.1:6379/15).
"""

from __future__ import annotations

import argparse
import base64
import csv
import io
import os
import random
import re
import resource
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.support.throwaway import KEY_ENV, REDIS_URL, Workers, app_env, create_database, drop_database, wait_finished  # noqa: E402

REMOTE_MODEL = "bench-llm"
MODELS = {"llm-a": 0.60, "llm-b": 0.45, "llm-c": 0.30}  # share of the items each one knows
TARGET_RATIO = 1.3
LETTERS = "ABCD"


def question(n: int) -> str:
    return f"Item {n}: which of these is in the picture?"


def options(n: int) -> list[str]:
    return [f"object {n}.{j}" for j in range(4)]


class Knowers:
    """The fake server's script: the model is told apart by its `seed` param (one remote model)."""

    def __init__(self, items: int):
        rng = random.Random(7)
        self.known = {name: {n for n in range(items) if rng.random() < share} for name, share in MODELS.items()}
        self.names = {index: name for index, name in enumerate(MODELS)}

    def __call__(self, body: dict) -> str:
        name = self.names[body["seed"]]
        text = body["messages"][-1]["content"]
        n = int(re.search(r"Item (\d+):", text).group(1))
        shown = dict(re.findall(r"^([A-D])\. (.*)$", text, re.M))
        right = options(n)[1]  # every key is B
        want = (lambda t: t == right) if n in self.known[name] else (lambda t: t != right)
        return next(letter for letter, t in shown.items() if want(t))


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of these processes so far (Linux /proc), and of this one."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return total + usage.ru_utime + usage.ru_stime


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def write_tsv(path: Path, rows: int, pictures: list[bytes] | None = None) -> None:
    """An MMBench-style TSV: every fifth row shares the image of the row before, every tenth has
    two circular copies. Images are small generated JPEGs, or the given `pictures` in turn."""
    from PIL import Image

    pictures_left = iter(pictures or ())

    header = ["index", "question", "hint", "A", "B", "C", "D", "answer", "category", "l2-category", "split", "image"]
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle, delimiter="\t", lineterminator="\n")
        writer.writerow(header)
        rng = random.Random(3)
        for n in range(rows):
            if n % 5 == 4:
                image = str(n - 1)
            elif pictures:
                image = base64.b64encode(next(pictures_left)).decode()
            else:
                picture = Image.new("RGB", (96, 72), tuple(rng.randrange(256) for _ in range(3)))
                for _ in range(6):
                    x, y = rng.randrange(96), rng.randrange(72)
                    picture.paste(tuple(rng.randrange(256) for _ in range(3)), (x, y, x + 20, y + 14))
                out = io.BytesIO()
                picture.save(out, "JPEG", quality=85)
                image = base64.b64encode(out.getvalue()).decode()
            opts = options(n)
            split = "test" if n % 10 == 9 else "dev"
            writer.writerow(
                [n, question(n), "", *opts, "" if split == "test" else "B", f"task {n % 20}", f"area {n % 4}", split, image]
            )
            if n % 10 == 0:
                for k in (1, 2):
                    rotated = opts[k:] + opts[:k]
                    writer.writerow(
                        [
                            n + k * 1_000_000,
                            question(n),
                            "",
                            *rotated,
                            LETTERS[(1 - k) % 4],
                            f"task {n % 20}",
                            f"area {n % 4}",
                            split,
                            str(n),
                        ]
                    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rows", type=int, default=10000)
    args = parser.parse_args()

    name = create_database("bf_qc")
    if name is None:
        return 0

    from tests.fakes.llm_server import FakeLLMServer

    tmp = Path(tempfile.mkdtemp(prefix="bench-qc-"))
    queue = f"bench-qc-{uuid.uuid4().hex[:8]}"
    server = FakeLLMServer(args.latency).start()
    server.script(REMOTE_MODEL, Knowers(args.items))
    models = tmp / "models.toml"
    models.write_text(
        "".join(
            f'[models.{model}]\nprovider = "openai"\nbase_url = "{server.base_url("openai")}"\nmodel = "{REMOTE_MODEL}"\n'
            f'api_key_env = "{KEY_ENV}"\nmax_concurrency = {args.concurrency}\ntimeout = 30\nparams = {{ seed = {index} }}\n\n'
            for index, model in enumerate(MODELS)
        )
    )
    env = app_env(
        name,
        queue,
        models,
        tmp,
        # Replies cached in Redis: the call threads (32 per worker) then hold no database connection,
        # which a Postgres shared with other work cannot spare (max_connections 100 here).
        BENCHFORGE_LLM_CACHE_URL=REDIS_URL,
        BENCHFORGE_JOB_HEARTBEAT_SECONDS="1",
    )
    os.environ.update(env)
    workers = Workers(env, queue, tmp)
    ok = True
    try:
        import django

        django.setup()
        from django.core.management import call_command

        from annotation.services import import_external_items
        from benchforge.services import create_or_update_user
        from curation.services import create_benchmark
        from jobs.models import Job
        from qc import selectors
        from qc.models import QCItem
        from qc.services import import_path, start_run

        call_command("migrate", verbosity=0)
        lead, _ = create_or_update_user("lead", "researcher")
        benchmark = create_benchmark(name="QC bench", user=lead, preset="mmbench")
        task = benchmark.tasks.order_by("pk").first()
        specs = [
            {"task": task, "external_id": str(n), "kind": "mcq", "question": question(n), "choices": options(n), "answer": "B"}
            for n in range(args.items)
        ]
        for start in range(0, len(specs), 500):
            import_external_items(benchmark, specs[start : start + 500], user=lead)
        warm = create_benchmark(name="QC warm-up", user=lead, preset="mmbench")
        warm_item = {"external_id": "w", "kind": "mcq", "question": question(100000), "choices": options(100000), "answer": "B"}
        import_external_items(warm, [{**warm_item, "task": warm.tasks.order_by("pk").first()}], user=lead)
        for _ in range(args.workers):
            workers.start()
        warm_run = start_run(warm, user=lead, filter="text_only", models=list(MODELS), parts=1)
        wait_finished(list(warm_run.jobs.all()), timeout=120)  # imports, SDK clients, connections: ready
        server.reset()

        # 1. the QC run
        pids = [proc.pid for proc in workers.procs]
        cpu_before, load_before = cpu_seconds(pids), os.getloadavg()[0]
        started = time.monotonic()
        run = start_run(benchmark, user=lead, filter="text_only", models=list(MODELS), parts=args.workers)
        parts = list(run.jobs.all())
        elapsed = time.monotonic() - started
        elapsed += wait_finished(parts, timeout=600)
        cpu = cpu_seconds(pids) - cpu_before
        parts = [Job.objects.get(pk=job.pk) for job in parts]
        made = len(server.requests(REMOTE_MODEL))
        without = args.items * 4 * len(MODELS)
        ideal = made / args.concurrency * args.latency
        ratio = elapsed / ideal
        peak = server.max_in_flight(REMOTE_MODEL)
        report = selectors.report(run)
        knowers = server._scripts[REMOTE_MODEL]
        expected = {n for n in range(args.items) if sum(n in knowers.known[m] for m in MODELS) >= 2}
        flagged = {int(e.item.external_id) for e in QCItem.objects.filter(run=run, flagged=True).select_related("item")}
        print(
            f"run: text-only, {args.items} four-option items x {len(MODELS)} models, {args.workers} Celery workers "
            f"(one part each), one bound of {args.concurrency}, latency {args.latency * 1000:.0f} ms, {os.cpu_count()} CPUs"
        )
        print(f"  calls made {made} vs {without} without early stopping ({100 * made / without:.0f}%); report: {report['calls']}")
        print(f"  flagged {len(flagged)} items; exactly the expected ones: {flagged == expected}")
        print(f"  max in flight seen by the server: {peak} (bound {args.concurrency})")
        print(f"  wall time {elapsed:.2f} s vs ideal {ideal:.2f} s for the calls made: {ratio:.2f}x (target <= {TARGET_RATIO}x)")
        print(
            f"  CPU used by the workers and this process (the fake server): {cpu:.1f} s, {1000 * cpu / made:.1f} ms per call; "
            f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after (the machine's other work competes)"
        )
        ok &= all(job.status == Job.Status.SUCCEEDED for job in parts) and flagged == expected
        ok &= peak <= args.concurrency and ratio <= TARGET_RATIO and made == report["calls"]["made"]

        # 2. the TSV import
        path = tmp / "bench.tsv"
        write_tsv(path, args.rows)
        size = path.stat().st_size
        external = create_benchmark(name="Imported bench", user=lead)
        before = peak_rss_mb()
        started = time.monotonic()
        job = import_path(external, path, user=lead)
        took = time.monotonic() - started
        after = peak_rss_mb()
        print(f"import: {args.rows} rows (+ circular copies) in a {size / 1e6:.1f} MB TSV, in this process")
        print(f"  {job.status}: {job.result}")
        print(f"  {took:.1f} s: {args.rows / took:.0f} rows/s; peak RSS {after:.0f} MB (was {before:.0f} MB before the import)")
        ok &= job.status == Job.Status.SUCCEEDED and job.result["errors"] == 0
        print("targets met" if ok else "TARGET MISSED")
        if not ok:
            print(workers.tail())
        return 0 if ok else 1
    finally:
        workers.stop_all()
        server.stop()
        drop_database(name)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
