"""LLM client throughput: LLMClient.chat_many against the loopback server at fixed latency.

Run: .venv/bin/python bench/llm_throughput.py [--calls 1000] [--concurrency 32] [--latency 0.1]

The fake server runs in its own process (with both in one process, the GIL would make this
measure the server, not the client). For each provider (openai; zhipuai through zai-sdk, or the
older zhipuai package when only that is installed) it prints:
  * calls/s for N distinct calls through chat_many with the cache off, against the ideal
    concurrency / latency (target: at least 80% of ideal), and the most requests the server
    saw in flight (must not exceed the concurrency);
  * the same N calls with the response cache on (first run: pays and stores), then a re-run
    by a fresh LLMClient on the same cache file: HTTP requests the server received (must be 0).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
from benchforge_harness.llm import Endpoint, LLMClient, ResponseCache, glm_sdk, user_message  # noqa: E402

KEY_ENV = "BENCH_FAKE_LLM_KEY"
TARGET_RATIO = 0.8


class FakeServerProcess:
    def __init__(self, latency: float):
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.fakes.llm_server",
                "--port",
                "0",
                "--latency",
                str(latency),
                "--reply",
                "The answer is B, because the chart's tallest bar is the second one.",
            ],
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.url = self.process.stdout.readline().strip()
        if not self.url.startswith("http://"):
            self.close()
            raise SystemExit("the fake LLM server did not start")

    def stats(self) -> dict:
        with urllib.request.urlopen(self.url + "/fake/stats", timeout=10) as response:
            return json.load(response)

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def requests_for(count: int, salt: str) -> list[list[dict]]:
    return [[user_message(f"{salt} question {i}: which bar is the tallest? Answer with a letter.")] for i in range(count)]


def run(client: LLMClient, name: str, batch: list[list[dict]]) -> float:
    started = time.perf_counter()
    results = client.chat_many(name, batch)
    elapsed = time.perf_counter() - started
    failed = [r for r in results if not hasattr(r, "text")]
    if failed:
        raise SystemExit(f"{len(failed)} calls failed, e.g. {failed[0]}")
    return elapsed


def bench_provider(server: FakeServerProcess, provider: str, args) -> bool:
    endpoint = Endpoint(
        name=provider,
        provider=provider,
        model=f"bench-{provider}",
        api_key_env=KEY_ENV,
        base_url=server.url + {"openai": "/v1", "zhipuai": "/api/paas/v4"}[provider],
        max_concurrency=args.concurrency,
        timeout=30,
    )
    ideal = args.concurrency / args.latency
    sdk = "openai" if provider == "openai" else glm_sdk()[0].__module__.split(".")[0]
    print(
        f"{provider} provider ({sdk} SDK), {args.calls} calls, concurrency {args.concurrency}, latency {args.latency * 1000:.0f} ms "
        f"(ideal {ideal:.0f} calls/s):"
    )

    with LLMClient({provider: endpoint}) as client:
        run(client, provider, requests_for(args.concurrency, "warm-up"))  # SDK import, connections
        before = server.stats()["requests"]
        cpu_started = time.process_time()
        elapsed = run(client, provider, requests_for(args.calls, f"{provider} uncached"))
        cpu_per_call = (time.process_time() - cpu_started) / args.calls
        stats = server.stats()
    achieved = args.calls / elapsed
    ratio = achieved / ideal
    ok = ratio >= TARGET_RATIO and stats["max_in_flight"] <= args.concurrency
    print(
        f"    cache off: {achieved:6.1f} calls/s = {ratio:5.1%} of ideal (target >= {TARGET_RATIO:.0%}); "
        f"{stats['requests'] - before} HTTP requests; max in flight at the server {stats['max_in_flight']} "
        f"(limit {args.concurrency}); client CPU {cpu_per_call * 1000:.2f} ms/call"
    )

    with tempfile.TemporaryDirectory() as tmp:
        cache_path = Path(tmp) / "llm-cache.sqlite3"
        batch = requests_for(args.calls, f"{provider} cached")
        with ResponseCache(cache_path) as cache, LLMClient({provider: endpoint}, cache) as client:
            elapsed = run(client, provider, batch)
        print(f"    cache on, first run: {args.calls / elapsed:6.1f} calls/s (every call paid and stored)")
        before = server.stats()["requests"]
        with ResponseCache(cache_path) as cache, LLMClient({provider: endpoint}, cache) as client:
            elapsed = run(client, provider, batch)
            usage = client.usage[provider]
        http_requests = server.stats()["requests"] - before
    ok = ok and http_requests == 0 and usage["calls"] == 0
    print(
        f"    cached re-run (new client, same cache file): {http_requests} HTTP requests (must be 0), "
        f"{usage['cache_hits']} cache hits, {args.calls / elapsed:,.0f} calls/s"
    )
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.1, help="seconds the server waits before each reply")
    parser.add_argument("--providers", default="openai,zhipuai")
    args = parser.parse_args()
    os.environ.setdefault(KEY_ENV, "bench-key")
    load_at_start = os.getloadavg()[0]
    server = FakeServerProcess(args.latency)
    try:
        results = [bench_provider(server, provider, args) for provider in args.providers.split(",")]
    finally:
        server.close()
    # Other work on this machine shares its cores with client and server: say how busy it was.
    print(f"load average (1 min) at the start {load_at_start:.2f}, at the end {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)")
    print("all targets met" if all(results) else "SOME TARGETS MISSED")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
