"""Harness judging throughput against the loopback LLM server, and the cached rerun.

Run: .venv/bin/python bench/harness.py [--judgments 10000] [--latency 0.1] [--concurrency 64] [--workers auto 1]

Starts tests.fakes.llm_server in its own process (so it does not share our GIL) answering every
request after --latency seconds, writes a release of N open questions and one model's
predictions, then times `python -m benchforge_harness judge` (in this process) end to end and prints:
  * for each --workers value (client processes sharing the 64 slots; "auto" is the CLI's default),
    the achieved wall time vs the ideal N * latency / concurrency (target: within 1.3x), each run
    with a fresh cache;
  * judge calls made by a rerun into a new output folder (target: 0, all from the cache);
  * the same prompts sent by LLMClient.chat_many alone (no harness around it), to show how much
    of the time is the harness's and how much the client layer's.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchforge_harness.calls import auto_workers  # noqa: E402
from benchforge_harness.cli import main as harness_main  # noqa: E402

REPLY = '{"rating": 7, "reason": "mostly right, one detail missing"}'


def start_server(latency: float) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.llm_server", "--port", "0", "--latency", str(latency), "--reply", REPLY],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    url = process.stdout.readline().strip()
    if not url.startswith("http"):
        process.kill()
        raise SystemExit(f"fake server did not start (printed {url!r})")
    return process, url


def cpu_seconds(server_pid: int) -> tuple[float, float]:
    """CPU time used so far by this process with its reaped worker processes, and by the server."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    workers = resource.getrusage(resource.RUSAGE_CHILDREN)  # includes the server only once it exits
    fields = Path(f"/proc/{server_pid}/stat").read_text().rsplit(")", 1)[1].split()
    server = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return own.ru_utime + own.ru_stime + workers.ru_utime + workers.ru_stime, server


def server_requests(url: str) -> int:
    with urllib.request.urlopen(url + "/fake/stats") as response:
        return json.loads(response.read())["requests"]


def write_inputs(folder: Path, count: int, url: str, concurrency: int) -> tuple[Path, Path, Path]:
    release = folder / "release"
    release.mkdir()
    with (
        (release / "items.jsonl").open("w", encoding="utf-8") as items,
        (folder / "model.jsonl").open("w", encoding="utf-8") as preds,
    ):
        for index in range(count):
            seed = f"q{index // 5}"
            item_id = seed if index % 5 == 0 else f"{seed}-r{index % 5}"
            items.write(
                json.dumps(
                    {
                        "id": item_id,
                        "seed_id": None if index % 5 == 0 else seed,
                        "question": f"Question {index}: how many red cars are parked on the left side of the street?",
                        "task": ["Counting", "OCR", "Reasoning", "Description", "Chart"][index % 5],
                        "category": "Perception",
                        "reference_answer": f"There are {index % 7} red cars on the left, next to a bus stop sign.",
                    }
                )
                + "\n"
            )
            preds.write(
                json.dumps({"id": item_id, "model": "bench-model", "answer": f"I count {index % 9} red cars on the left side."})
                + "\n"
            )
    models = folder / "models.toml"
    models.write_text(
        f'[models.judge]\nprovider = "openai"\nbase_url = "{url}/v1"\nmodel = "judge"\n'
        f'api_key_env = "BENCH_FAKE_KEY"\nmax_concurrency = {concurrency}\ntimeout = 30\n',
        encoding="utf-8",
    )
    return release, folder / "model.jsonl", models


def judge(release: Path, predictions: Path, models: Path, cache: Path, out: Path, workers: str = "auto") -> tuple[float, dict]:
    started = time.perf_counter()
    code = harness_main(
        [
            "judge",
            "--release",
            str(release),
            "--models",
            str(models),
            "--cache",
            str(cache),
            "--judge",
            "judge",
            "--predictions",
            str(predictions),
            "--out",
            str(out),
            "--workers",
            str(workers),
        ]
    )
    elapsed = time.perf_counter() - started
    if code != 0:
        raise SystemExit(f"harness judge exited with {code}")
    return elapsed, json.loads((out / "results.json").read_text(encoding="utf-8"))


def baseline(release: Path, predictions: Path, models: Path, cache: Path, ideal: float) -> str:
    """The judge's own prompts through LLMClient.chat_many in this process, nothing else."""
    from benchforge_harness.llm import LLMClient, ResponseCache, load_endpoints
    from benchforge_harness.prompts import Prompts
    from benchforge_harness.release import load_predictions, load_release

    loaded = load_release(release)
    answers = load_predictions(predictions, loaded).answers
    prompts = Prompts()
    template = prompts.get("pointwise")
    requests = [
        [
            {
                "role": "user",
                "content": template.render(
                    task=item.task,
                    task_rule=prompts.task_rule(item.task),
                    history="",
                    question_type="",
                    question=item.question,
                    reference=item.reference_answer,
                    answer=answers[item.id],
                ),
            }
        ]
        for item in loaded.items
    ]
    client = LLMClient(load_endpoints(models), ResponseCache(cache))
    started = time.perf_counter()
    cpu = time.process_time()
    client.chat_many("judge", requests)
    elapsed = time.perf_counter() - started
    return (
        f"LLMClient.chat_many alone, same {len(requests)} prompts, cache on, 1 process: {elapsed:.2f} s "
        f"({elapsed / ideal:.2f}x ideal), {1000 * (time.process_time() - cpu) / len(requests):.2f} ms CPU per call"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judgments", type=int, default=10_000)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--workers", nargs="+", default=["auto", "1"])
    args = parser.parse_args()
    os.environ["BENCH_FAKE_KEY"] = "bench"
    process, url = start_server(args.latency)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            release, predictions, models = write_inputs(folder, args.judgments, url, args.concurrency)
            ideal = args.judgments * args.latency / args.concurrency
            for workers in args.workers:
                cache = folder / f"cache-{workers}.sqlite"
                before = server_requests(url)
                client_cpu, server_cpu = cpu_seconds(process.pid)
                load = os.getloadavg()[0]
                elapsed, results = judge(release, predictions, models, cache, folder / f"run-{workers}", workers)
                judged = results["models"]["bench-model"]["judged"]
                client_cpu2, server_cpu2 = cpu_seconds(process.pid)
                processes = auto_workers(args.judgments, args.concurrency) if workers == "auto" else workers
                print(
                    f"judge, --workers {workers} ({processes} process(es)): {judged} judgments in {elapsed:.2f} s = {judged / elapsed:.0f}/s; "
                    f"ideal {args.judgments} x {args.latency} s / {args.concurrency} = {ideal:.2f} s; "
                    f"ratio {elapsed / ideal:.2f}x (target <= 1.30x); server saw {server_requests(url) - before} requests; "
                    f"CPU: harness {client_cpu2 - client_cpu:.1f} s, server {server_cpu2 - server_cpu:.1f} s; "
                    f"load average at start {load:.1f} on {os.cpu_count()} cores"
                )
            before = server_requests(url)
            elapsed2, results2 = judge(release, predictions, models, cache, folder / "rerun")
            calls = results2["run"]["usage"]["calls"]
            print(
                f"cached rerun (new output folder): {elapsed2:.2f} s, judge calls {calls} (target 0), "
                f"cache hits {results2['run']['usage']['cache_hits']}, "
                f"server requests during rerun {server_requests(url) - before}, "
                f"same results: {results2['models'] == results['models']}"
            )
            print(baseline(release, predictions, models, folder / "baseline.sqlite", ideal))
    finally:
        process.terminate()
        process.wait(timeout=10)


if __name__ == "__main__":
    main()
