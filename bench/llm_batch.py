"""LLM batches on Celery workers: the shared concurrency bound, throughput, and a kill + recovery.

Run: .venv/bin/python bench/llm_batch.py [--calls 1000] [--concurrency 16] [--latency 0.1] [--workers 2]

It creates a throwaway Postgres database (dropped at the end), serves the loopback LLM server in
this process with --latency seconds per reply, declares one endpoint with max_concurrency =
--concurrency, and starts --workers Celery workers (solo pool) on Redis. Then:

  1. a batch of --calls calls split into one part job per worker (start_batch_in_parts): the most
     requests the server saw in flight at once (must never exceed the bound) and the wall time
     against the ideal calls / concurrency * latency (target: within 1.3x);
  2. the same again with new calls, one worker SIGKILLed mid-batch (a machine losing power), its
     job re-queued by the workers' sweeper (nobody presses Resume) and finished on a restarted
     worker: requests the server received
     against --calls. A call whose reply the killed worker had received is never asked again (it is
     recorded, or answered by the shared cache); the only calls asked twice are those the server
     was still answering when the worker died, whose replies went to a dead process - no client
     can get those back. The check: every repeated call was in flight at the kill, and there are
     at most --concurrency of them.

Connections: BENCH_POSTGRES_URL (admin, default postgres://postgres@127.0.0.1:5432/postgres),
BENCH_REDIS_URL (default redis://127.0.0.1:6379/15).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.support.throwaway import KEY_ENV, Workers, app_env, create_database, drop_database, wait_finished  # noqa: E402

MODEL = "bench-vlm"
TARGET_RATIO = 1.3
LEASE_SECONDS = 5  # the killed worker's slots come back after this


class Arrivals:
    """The fake server's reply script: answers every call, noting when each prompt arrived."""

    def __init__(self):
        self.lock = threading.Lock()
        self.seen: dict[str, list[float]] = defaultdict(list)

    def __call__(self, body: dict) -> str:
        prompt = body["messages"][-1]["content"]
        with self.lock:
            self.seen[prompt].append(time.monotonic())
        return f"The answer to '{prompt[:40]}' is B."

    def requests(self, prefix: str) -> int:
        with self.lock:
            return sum(len(times) for prompt, times in self.seen.items() if prompt.startswith(prefix))

    def repeated(self, prefix: str) -> dict[str, list[float]]:
        with self.lock:
            return {p: list(t) for p, t in self.seen.items() if p.startswith(prefix) and len(t) > 1}


def calls(n: int, salt: str) -> list[dict]:
    return [
        {"key": f"{i:05d}", "messages": [{"role": "user", "content": f"{salt} question {i}: which bar is the tallest?"}]}
        for i in range(n)
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    name = create_database("bf_llmbatch")
    if name is None:
        return 0

    from tests.fakes.llm_server import FakeLLMServer

    tmp = Path(tempfile.mkdtemp(prefix="bench-llm-"))
    queue = f"bench-llm-{uuid.uuid4().hex[:8]}"
    server = FakeLLMServer(args.latency).start()
    arrivals = Arrivals()
    server.script(MODEL, arrivals)
    models = tmp / "models.toml"
    models.write_text(
        f'[models.bench]\nprovider = "openai"\nbase_url = "{server.base_url("openai")}"\nmodel = "{MODEL}"\n'
        f'api_key_env = "{KEY_ENV}"\nmax_concurrency = {args.concurrency}\ntimeout = 30\n'
        "input_cost_per_mtok = 0.5\noutput_cost_per_mtok = 1.5\n"
    )
    env = app_env(
        name,
        queue,
        models,
        tmp,
        BENCHFORGE_LLM_SLOT_LEASE_SECONDS=str(LEASE_SECONDS),
        BENCHFORGE_JOB_HEARTBEAT_TIMEOUT="3",
        BENCHFORGE_JOB_HEARTBEAT_SECONDS="1",
        BENCHFORGE_JOB_RECOVERY_BACKOFF="1",
    )
    os.environ.update(env)
    workers = Workers(env, queue, tmp)
    ok = True
    try:
        import django

        django.setup()
        from django.core.management import call_command

        from benchforge.services import create_or_update_user
        from jobs.models import Job
        from llm.models import LLMCall
        from llm.selectors import batch_jobs
        from llm.services import start_batch_in_parts

        call_command("migrate", verbosity=0)
        lead, _ = create_or_update_user("lead", "researcher")
        for _ in range(args.workers):
            workers.start()
        warm = start_batch_in_parts(calls(4 * args.workers, "warm-up"), endpoint="bench", parts=args.workers, user=lead)
        wait_finished(batch_jobs(warm), timeout=120)  # imports, SDK clients, connections: ready
        server.reset()

        # 1. throughput and the bound
        ideal = args.calls / args.concurrency * args.latency
        batch = start_batch_in_parts(calls(args.calls, "run1"), endpoint="bench", parts=args.workers, user=lead, label="bench")
        elapsed = wait_finished(batch_jobs(batch), timeout=30 * ideal + 60)
        parts = list(batch_jobs(batch))
        peak = server.max_in_flight(MODEL)
        answered = LLMCall.objects.filter(batch=batch, status="ok").count()
        ratio = elapsed / ideal
        print(
            f"run 1: {args.calls} calls, {args.workers} Celery workers (one part job each), max_concurrency "
            f"{args.concurrency}, latency {args.latency * 1000:.0f} ms, {os.cpu_count()} CPUs"
        )
        print(f"  answered {answered}/{args.calls}; requests the server received: {arrivals.requests('run1')}")
        print(f"  max in flight seen by the server: {peak} (bound {args.concurrency})")
        print(f"  wall time {elapsed:.2f} s vs ideal {ideal:.2f} s: {ratio:.2f}x (target <= {TARGET_RATIO}x)")
        print(f"  result of part 1: {parts[0].result}")
        ok &= peak <= args.concurrency and ratio <= TARGET_RATIO and answered == args.calls
        ok &= all(job.status == Job.Status.SUCCEEDED for job in parts)
        server.reset()

        # 2. a worker killed mid-batch, its job recovered by the sweeper
        batch = start_batch_in_parts(calls(args.calls, "run2"), endpoint="bench", parts=args.workers, user=lead, label="kill")
        parts = list(batch_jobs(batch))
        deadline = time.monotonic() + 120
        while LLMCall.objects.filter(batch=batch).exclude(status="pending").count() < args.calls * 0.4:
            if time.monotonic() > deadline:
                raise SystemExit("run 2 made no progress")
            time.sleep(0.01)
        victim_job = Job.objects.filter(pk__in=[j.pk for j in parts], status=Job.Status.RUNNING).first()
        pid = int(re.search(r"\(pid (\d+)\)", victim_job.worker).group(1))  # jobs.runner.worker_name
        victim = next(proc for proc in workers.procs if proc.pid == pid)
        killed_at = time.monotonic()
        workers.kill(victim)
        recorded_before = LLMCall.objects.filter(job=victim_job).exclude(status="pending").count()
        workers.start()  # as a supervisor would
        wait_finished(parts, timeout=30 * ideal + 120)
        parts = [Job.objects.get(pk=job.pk) for job in parts]
        answered = LLMCall.objects.filter(batch=batch, status="ok").count()
        made = arrivals.requests("run2")
        repeated = arrivals.repeated("run2")
        window = args.latency + 0.25  # asked this long before the kill at most: its reply had not reached the worker
        in_flight = {p for p, times in repeated.items() if killed_at - window <= times[0] <= killed_at}
        peak = server.max_in_flight(MODEL)
        victim_job = next(job for job in parts if job.pk == victim_job.pk)
        print(
            f"run 2: worker {pid} SIGKILLed with {recorded_before}/{victim_job.total} of its part recorded; "
            f"job #{victim_job.pk} recovered {victim_job.recoveries} time(s) by the sweeper ({victim_job.runs} runs)"
        )
        print(f"  answered {answered}/{args.calls}; requests the server received in both runs: {made} (calls: {args.calls})")
        print(
            f"  calls asked twice: {len(repeated)}, all in flight at the kill (asked <= {window * 1000:.0f} ms before it, "
            f"replies lost with the worker): {in_flight == set(repeated)}; answered calls asked again: "
            f"{len(set(repeated) - in_flight)}"
        )
        print(f"  killed job's result: {victim_job.result}")
        print(f"  max in flight seen by the server: {peak} (bound {args.concurrency})")
        ok &= peak <= args.concurrency and answered == args.calls and in_flight == set(repeated)
        ok &= len(repeated) <= args.concurrency and made == args.calls + len(repeated)
        ok &= all(job.status == Job.Status.SUCCEEDED for job in parts) and victim_job.recoveries >= 1
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
