"""Options and plumbing shared by the commands: the CLI side of the scoring library."""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from benchforge_harness import __version__, llm
from benchforge_harness.calls import AUTO, AUTO_MAX_WORKERS, AUTO_MIN_CALLS, AUTO_MIN_CONCURRENCY, ERROR
from benchforge_harness.io import InputError
from benchforge_harness.prompts import LANGUAGES, Prompts
from benchforge_harness.release import Predictions, Release, load_predictions
from benchforge_harness.report import Report, Table, text_table, write_outputs
from benchforge_harness.scoring.inputs import ImageLoader, path_loader

DEFAULT_CACHE = Path(".harness-cache") / "responses.sqlite"
FAILURE_REASONS_SHOWN = 3


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def add_release_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--release", default=".", metavar="DIR", help="release folder holding items.jsonl (default: the current folder)"
    )
    parser.add_argument(
        "--split",
        metavar="NAME",
        help="only the items of an anchor split the release ships (splits/NAME.json, or a split file): "
        "a cheaper run whose full score `estimate` predicts",
    )


def add_llm_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--models",
        default=os.environ.get("BENCHFORGE_MODELS", "models.toml"),
        metavar="TOML",
        help="models file naming the endpoints (default: $BENCHFORGE_MODELS or models.toml); "
        "API keys are read from the environment variables it names",
    )
    parser.add_argument(
        "--cache",
        default=str(DEFAULT_CACHE),
        metavar="FILE",
        help=f"response cache (SQLite); a rerun of the same calls is answered from it (default: {DEFAULT_CACHE})",
    )
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the response cache")
    parser.add_argument(
        "--workers",
        type=_workers,
        default=AUTO,
        metavar="N",
        help="split the calls over N processes; together they never exceed an endpoint's "
        "max_concurrency, and share its requests_per_minute. This only speeds up fast endpoints, "
        f"where this client's CPU is the limit. 'auto' (the default) uses one process per core, up "
        f"to {AUTO_MAX_WORKERS}, for runs of {AUTO_MIN_CALLS}+ calls to an endpoint allowed "
        f"{AUTO_MIN_CONCURRENCY}+ concurrent calls, else one",
    )


def add_judge_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--judge", required=True, metavar="NAME", help="endpoint name of the judge in the models file")


def add_run_options(parser: argparse.ArgumentParser, default_out: str, *, retries: bool = True) -> None:
    parser.add_argument(
        "--out",
        default=default_out,
        metavar="DIR",
        help=f"output folder; an interrupted run resumes from it (default: {default_out})",
    )
    parser.add_argument(
        "--restart", action="store_true", help="set aside (rename) the samples already in --out and score everything again"
    )
    parser.add_argument(
        "--prompts", metavar="DIR", help="folder of prompt templates that replace the built-in ones of the same name"
    )
    parser.add_argument(
        "--language",
        choices=sorted(LANGUAGES),
        help="write every prompt in this language (default: each item's own, else the release's, else en)",
    )
    if retries:
        parser.add_argument(
            "--parse-retries",
            type=int,
            default=2,
            metavar="N",
            help="times to re-ask a judge whose reply cannot be read (default: 2)",
        )


def add_predictions_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--predictions",
        nargs="+",
        required=True,
        metavar="JSONL",
        help="predictions file(s) written by `infer`, one model per file",
    )


def open_client(args, share: int = 1) -> llm.LLMClient:
    """A client for the models file; with share > 1, for one of `share` worker processes, each
    getting its part of every endpoint's request rate (the concurrency bound is shared whole:
    the runner installs one semaphore per endpoint for all the workers)."""
    endpoints = llm.load_endpoints(args.models)
    if share > 1:
        endpoints = {
            name: dataclasses.replace(ep, requests_per_minute=ep.requests_per_minute / share if ep.requests_per_minute else None)
            for name, ep in endpoints.items()
        }
    cache = llm.ResponseCache(None if args.no_cache else args.cache)
    return llm.LLMClient(endpoints, cache)


def ready_client(args, names: Iterable[str]) -> llm.LLMClient:
    """open_client, then stop before the first call if an endpoint is unknown, its key variable
    unset or its SDK missing: every problem in one message."""
    client = open_client(args)
    client.check(names)
    return client


def _workers(value: str) -> int | str:
    if value == AUTO:
        return AUTO
    if not re.fullmatch(r"[0-9]+", value) or int(value) < 1:  # ASCII digits only: str.isdigit accepts '²'
        raise argparse.ArgumentTypeError(f"expected 'auto' or a whole number of 1 or more, got {value!r}")
    return int(value)


def run_options(args) -> dict:
    """Keyword arguments of the scoring functions for --workers, and progress on stderr."""
    return {"workers": args.workers, "reopen": lambda share: open_client(args, share), "progress_stream": sys.stderr}


def endpoint_identity(ep) -> dict:
    """What decides a judge's answers; a resumed run must use the same."""
    return {"name": ep.name, "provider": ep.provider, "base_url": ep.base_url, "model": ep.model, "params": ep.params}


def load_all_predictions(paths: list[str], release: Release) -> list[Predictions]:
    loaded = [load_predictions(path, release) for path in paths]
    seen: dict[str, Path] = {}
    for predictions in loaded:
        if predictions.model in seen:
            raise InputError(f"{predictions.path}: model {predictions.model!r} already comes from {seen[predictions.model]}")
        seen[predictions.model] = predictions.path
    return loaded


def answers_of(predictions: list[Predictions]) -> dict[str, dict[str, str]]:
    return {p.model: p.answers for p in predictions}


def image_loader(release: Release) -> ImageLoader:
    return path_loader(release.image_path)


# What an item may lack for a scoring mode, in the order they are looked for: (name, lacks(item)).
MISSING = (
    ("answer key", lambda item: item.is_mcq and not item.answer),
    ("reference answer", lambda item: not item.is_mcq and not item.reference_answer),
    ("image description", lambda item: not item.is_mcq and not item.description),
)


def skipped_items(release: Release, scores, kind: str) -> list[str]:
    """Why the items `scores` leaves out are left out, one line per reason with its count: the other
    kind of question (kind: "open" or "mcq", what the command scores), or what the items lack,
    withheld by a public bundle or absent from the release. Empty when every item is scored."""
    other: Counter = Counter()
    lacking: dict[tuple[str, str], list[str]] = {}
    for item in release.items:
        if scores(item):
            continue
        noun = "multiple-choice item(s)" if item.is_mcq else "open question(s)"
        if item.is_mcq != (kind == "mcq"):
            other[noun] += 1
            continue
        field = next((name for name, lacks in MISSING if lacks(item)), "what this command needs")
        lacking.setdefault((noun, field), []).append(item.split or "unsplit")
    lines = [
        f"{n} {noun} left to {'`mcq`' if noun.startswith('multiple') else '`judge` and the other judge commands'}"
        for noun, n in other.items()
    ]
    for (noun, field), splits in lacking.items():
        lines.append(f"{len(splits)} {noun} cannot be scored: {withheld_reason(release, field, sorted(set(splits)))}")
    return lines


def withheld_reason(release: Release, field: str, splits: list[str]) -> str:
    """Why items of these splits lack `field`, and where their scores come from instead."""
    where = f" ({', '.join(splits)} split)" if splits != ["unsplit"] else ""
    if release.manifest.get("variant") == "public" and release.manifest.get("withheld"):
        return (
            f"this public bundle withholds their {field}s{where}. Score them on the benchmark's leaderboard, "
            "or with the private bundle."
        )
    return f"they have no {field}{where}."


def say_skipped(label: str, release: Release, scores, kind: str) -> None:
    """Say on the console which items the command `label` leaves out, and why."""
    for line in skipped_items(release, scores, kind):
        say(f"{label}: {line}")


def release_rules(release: Release) -> dict[str, str]:
    """Task rules the release's taxonomy.json defines (they replace the built-in ones)."""
    return release.judge_rules()


def rules_fingerprint(prompts: Prompts, release: Release, tasks: set) -> str:
    text = "\n".join(
        f"{t}={release.judge_rule(t) or prompts.task_rule(t, language)}"
        for language in release.languages
        for t in sorted(tasks, key=str)
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def prompt_versions(prompts: Prompts, release: Release, names: Iterable[str]) -> dict:
    """The languages the run asks in and the sha256 of each template it uses, found before any call:
    what run.json compares on resuming and results.json records."""
    languages = [prompts.forced] if prompts.forced else release.languages
    for language in languages:
        for name in names:
            prompts.get(name, language)
    return {"languages": languages, **prompts.versions()}


def require_same_settings(out_dir: Path, settings: dict, restart: bool) -> None:
    """Refuse to resume a run made with other settings (judge, templates...), unless restarting."""
    run_file = out_dir / "run.json"
    if run_file.exists():
        try:
            previous = json.loads(run_file.read_text(encoding="utf-8")).get("settings", {})
        except json.JSONDecodeError:
            previous = None
        if previous != settings and not restart:
            changed = sorted(k for k in set(previous or {}) | set(settings) if (previous or {}).get(k) != settings.get(k))
            raise InputError(
                f"{out_dir} holds a run made with different settings ({', '.join(changed) or 'unreadable run.json'}); "
                "use another --out, or --restart to set the old samples aside and start over"
            )
    if restart:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        for path in out_dir.glob("*.jsonl"):
            path.rename(path.with_name(f"{path.name}.{stamp}.old"))
    out_dir.mkdir(parents=True, exist_ok=True)
    run_file.write_text(json.dumps({"settings": settings}, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def run_section(stats, client: llm.LLMClient, endpoint: str, role: str) -> dict:
    """results.json's "run": this run's counts and usage, the endpoint, and the cost when priced."""
    section = {**stats.as_dict(), role: endpoint}
    price = llm.cost(client.endpoints[endpoint], stats.usage)
    if price is not None:
        section["cost"] = price
    return section


def failed_rows(rows: Iterable[dict]) -> list[dict]:
    return [row for row in rows if row.get("status") == ERROR]


def report_failures(label: str, failures: list[dict]) -> None:
    """The first few distinct reasons calls failed, with how often each came up."""
    if not failures:
        return
    reasons = Counter(str(row.get("error") or "unknown error") for row in failures)
    say(f"{label}: {len(failures)} call(s) failed for good; run the same command again to retry them. Reasons:")
    for reason, count in reasons.most_common(FAILURE_REASONS_SHOWN):
        say(f"  {count} x {reason}")
    if len(reasons) > FAILURE_REASONS_SHOWN:
        say(f"  ... and {len(reasons) - FAILURE_REASONS_SHOWN} other reason(s); every failed row has its 'error' in the samples")


def finish(label: str, out: Path, results: dict, report: Report, failures: list[dict], line: str) -> int:
    """Write results.json and the report, print the overview table, the failure reasons and
    where everything is; exit status 1 when calls failed, else 0. results.json names the harness
    version that computed it, beside the release (whose manifest names the harness it carries)."""
    results.setdefault("harness_version", __version__)
    paths = write_outputs(out, results, report)
    overview = next((block for section in report.sections for block in section.blocks if isinstance(block, Table)), None)
    if overview is not None:
        print(text_table(overview), flush=True)
    report_failures(label, failures)
    say(f"{label}: {line}; results in {paths['results']}, report in {paths['html']}")
    return 1 if failures else 0
