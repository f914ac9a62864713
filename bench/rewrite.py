"""A rewrite batch on a real Celery worker: throughput against the ideal, and the concurrency bound.

Run: .venv/bin/python bench/rewrite.py [--seeds 1000] [--concurrency 16] [--latency 0.2]

It creates a throwaway Postgres database (dropped at the end), serves the loopback LLM server in
this process with --latency seconds per reply, declares one GLM endpoint (provider "zhipuai", so
calls go through zai-sdk) with max_concurrency = --concurrency, stores --seeds accepted seed items
and starts one Celery worker (solo pool) on Redis. A small warm-up batch loads everything; then one
batch over every seed: the wall time from start_batch to the batch finished, against the ideal
calls / concurrency * latency (target: within 1.3x), the most requests the server saw at once
(never above the bound), requests made and rewrites stored. Every reply is five clean rewrites,
so each seed is one call (no corrective retry). Exits non-zero on a missed target.

Connections: BENCH_POSTGRES_URL (admin, default postgres://postgres@127.0.0.1:5432/postgres),
BENCH_REDIS_URL (default redis://127.0.0.1:6379/15).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.support.throwaway import KEY_ENV, Workers, app_env, create_database, drop_database  # noqa: E402

MODEL = "bench-glm"
TARGET_RATIO = 1.3


def reply(body: dict) -> str:
    """Five clean rewrites of the question the prompt ends with."""
    question = body["messages"][0]["content"].rsplit("：", 1)[-1].rstrip("？")
    return "\n".join(
        [
            f"请问{question}？",
            f"能说说{question}吗？",
            f"我想知道{question}。",
            f"麻烦告诉我：{question}？",
            f"{question}，看得出来吗？",
        ]
    )


def wait_finished(batch, timeout: float) -> float:
    from rewrite.models import RewriteBatch

    start = time.monotonic()
    while RewriteBatch.objects.get(pk=batch.pk).status not in (RewriteBatch.Status.FINISHED, RewriteBatch.Status.FAILED):
        if time.monotonic() - start > timeout:
            raise SystemExit(f"batch {batch.number} did not finish within {timeout:.0f} s")
        time.sleep(0.01)
    return time.monotonic() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency", type=float, default=0.2)
    args = parser.parse_args()

    name = create_database("bf_rewrite")
    if name is None:
        return 0

    from tests.fakes.llm_server import FakeLLMServer

    tmp = Path(tempfile.mkdtemp(prefix="bench-rewrite-"))
    queue = f"bench-rewrite-{uuid.uuid4().hex[:8]}"
    server = FakeLLMServer(args.latency).start()
    server.script(MODEL, reply)
    models = tmp / "models.toml"
    models.write_text(
        f'[models.glm]\nprovider = "zhipuai"\nbase_url = "{server.base_url("zhipuai")}"\nmodel = "{MODEL}"\n'
        f'api_key_env = "{KEY_ENV}"\nmax_concurrency = {args.concurrency}\ntimeout = 30\n'
        "input_cost_per_mtok = 0.5\noutput_cost_per_mtok = 1.5\n"
    )
    env = app_env(name, queue, models, tmp)
    os.environ.update(env)
    # BENCH_PROFILE: a path; cProfile the worker's main (job) thread into it.
    workers = Workers(env, queue, tmp, profile=os.environ.get("BENCH_PROFILE"))
    ok = True
    try:
        import django

        django.setup()
        from django.core.management import call_command

        from annotation.models import Item
        from benchforge.services import create_or_update_user
        from curation.services import load_preset
        from rewrite import services
        from rewrite.models import RawReply, Rewrite

        call_command("migrate", verbosity=0)
        lead, _ = create_or_update_user("lead", "researcher")
        benchmark = load_preset("alignmmbench", slug="bench")
        task = benchmark.tasks.order_by("pk").first()
        version = services.ensure_default_templates(benchmark)[0].latest
        # Rows straight in (the bench measures the batch, not item creation).
        Item.objects.bulk_create(
            [
                Item(benchmark=benchmark, task=task, status="accepted", author=lead, question=f"图中第{i}排的架子上有几只猫？")
                for i in range(args.seeds + 2)
            ],
            batch_size=500,
        )
        workers.start()
        ids = list(Item.objects.filter(benchmark=benchmark).order_by("pk").values_list("pk", flat=True))
        warm = services.start_batch(benchmark, user=lead, endpoint="glm", template_version=version, items=ids[:2])
        wait_finished(warm, timeout=120)  # imports, SDK clients, connections: ready
        server.reset()

        ideal = args.seeds / args.concurrency * args.latency
        started = time.monotonic()
        batch = services.start_batch(benchmark, user=lead, endpoint="glm", template_version=version, items=ids[2:])
        stored = time.monotonic() - started
        wait_finished(batch, timeout=30 * ideal + 60)
        elapsed = time.monotonic() - started  # from start_batch: storing the batch counts too
        batch.refresh_from_db()
        peak = server.max_in_flight(MODEL)
        requests = len(server.requests(MODEL))
        replies = RawReply.objects.filter(batch_seed__batch=batch).count()
        rewrites = Rewrite.objects.filter(batch=batch).count()
        ratio = elapsed / ideal
        print(
            f"rewrite batch: {args.seeds} seeds, one Celery worker (solo pool), GLM endpoint through zai-sdk, "
            f"max_concurrency {args.concurrency}, latency {args.latency * 1000:.0f} ms, {os.cpu_count()} CPUs"
        )
        print(f"  batch {batch.status}; replies stored {replies}/{args.seeds}; rewrites stored {rewrites}; requests {requests}")
        print(f"  max in flight seen by the server: {peak} (bound {args.concurrency})")
        print(
            f"  wall time {elapsed:.2f} s (storing the batch and its estimate: {stored:.2f} s) vs ideal {ideal:.2f} s: "
            f"{ratio:.2f}x (target <= {TARGET_RATIO}x)"
        )
        print(f"  usage: {batch.usage}")
        ok = (
            batch.status == "finished"
            and peak <= args.concurrency
            and ratio <= TARGET_RATIO
            and replies == args.seeds
            and requests == args.seeds
            and rewrites == 5 * args.seeds
        )
        print("targets met" if ok else "TARGET MISSED")
        if not ok:
            print(workers.tail())
        return 0 if ok else 1
    finally:
        workers.stop_all()
        server.stop()
        drop_database(name)


if __name__ == "__main__":
    sys.exit(main())
