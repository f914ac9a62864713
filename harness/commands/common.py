"""Options and plumbing shared by the commands."""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import math
import os
import sys
from pathlib import Path

from harness import llm
from harness.io import InputError
from harness.prompts import Prompts
from harness.release import Item, Predictions, Release, load_predictions
from harness.runner import AUTO, AUTO_MAX_WORKERS, AUTO_MIN_CONCURRENCY, AUTO_MIN_JOBS

DEFAULT_CACHE = Path(".harness-cache") / "responses.sqlite"


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def add_release_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--release", default=".", metavar="DIR",
                        help="release folder holding items.jsonl (default: the current folder)")


def add_llm_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--models", default=os.environ.get("BENCHFORGE_MODELS", "models.toml"), metavar="TOML",
                        help="models file naming the endpoints (default: $BENCHFORGE_MODELS or models.toml); "
                             "API keys are read from the environment variables it names")
    parser.add_argument("--cache", default=str(DEFAULT_CACHE), metavar="FILE",
                        help=f"response cache (SQLite); a rerun of the same calls is answered from it (default: {DEFAULT_CACHE})")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the response cache")
    parser.add_argument("--workers", type=_workers, default=AUTO, metavar="N",
                        help="split the calls over N processes sharing each endpoint's concurrency and rate limits; "
                             "this only speeds up fast endpoints, where this client's CPU is the limit. 'auto' "
                             f"(the default) uses one process per core, up to {AUTO_MAX_WORKERS}, for runs of "
                             f"{AUTO_MIN_JOBS}+ calls to an endpoint allowed {AUTO_MIN_CONCURRENCY}+ concurrent calls, "
                             "else one")


def add_judge_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--judge", required=True, metavar="NAME", help="endpoint name of the judge in the models file")


def add_run_options(parser: argparse.ArgumentParser, default_out: str, *, retries: bool = True) -> None:
    parser.add_argument("--out", default=default_out, metavar="DIR",
                        help=f"output folder; an interrupted run resumes from it (default: {default_out})")
    parser.add_argument("--restart", action="store_true",
                        help="set aside (rename) the samples already in --out and score everything again")
    parser.add_argument("--prompts", metavar="DIR",
                        help="folder of prompt templates that replace the built-in ones of the same name")
    if retries:
        parser.add_argument("--parse-retries", type=int, default=2, metavar="N",
                            help="times to re-ask a judge whose reply cannot be read (default: 2)")


def add_predictions_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--predictions", nargs="+", required=True, metavar="JSONL",
                        help="predictions file(s) written by `infer`, one model per file")


def open_client(args, share: int = 1):
    """A client for the models file; with share > 1, for one of `share` worker processes, each
    getting its part of every endpoint's concurrency and request rate."""
    endpoints = llm.load_endpoints(args.models)
    if share > 1:
        endpoints = {
            name: dataclasses.replace(
                ep,
                max_concurrency=max(1, math.ceil(ep.max_concurrency / share)),
                requests_per_minute=ep.requests_per_minute / share if ep.requests_per_minute else None,
            )
            for name, ep in endpoints.items()
        }
    cache = llm.ResponseCache(None if args.no_cache else args.cache)
    return llm.LLMClient(endpoints, cache)


def _workers(value: str) -> int | str:
    if value == AUTO:
        return AUTO
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"expected 'auto' or a whole number of 1 or more, got {value!r}")
    return int(value)


def worker_options(args) -> dict:
    """run_jobs keyword arguments for --workers."""
    return {"workers": args.workers, "reopen": lambda share: open_client(args, share)}


def endpoint(client, name: str):
    if name not in client.endpoints:
        declared = ", ".join(sorted(client.endpoints)) or "none"
        raise llm.ConfigError(f"no endpoint named {name!r} in the models file (declared: {declared})")
    return client.endpoints[name]


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


def image_paths(release: Release, item: Item) -> list[Path]:
    paths = [release.image_path(p) for p in item.images]
    for path in paths:
        if not path.is_file():
            raise InputError(f"{release.root / 'items.jsonl'}: item {item.id!r} needs image {path}, which is missing")
    return paths


def check_vision(ep, release: Release, items: list[Item], text_only: bool, role: str) -> bool:
    """Whether to attach images; refuses a text-only endpoint unless --text-only says that is intended."""
    has_images = any(item.images for item in items)
    if not has_images or text_only:
        return False
    if not ep.vision:
        raise InputError(
            f"the {role} endpoint {ep.name!r} is declared vision = false but the items carry images; "
            "use a vision endpoint, or pass --text-only to send the questions without images"
        )
    for item in items:
        image_paths(release, item)  # fail before the first call, not halfway through
    return True


def render_history(history) -> str:
    names = {"user": "User", "assistant": "Assistant"}
    return "\n".join(f"{names[turn['role']]}: {turn['content']}" for turn in history)


def rules_fingerprint(prompts: Prompts, release: Release, tasks: set) -> str:
    text = "\n".join(f"{t}={release.judge_rule(t) or prompts.task_rule(t)}" for t in sorted(tasks, key=str))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def group_mean(rows, key: str, value: str) -> dict:
    """{group: {"mean", "n"}} over rows, in first-seen order."""
    buckets: dict = {}
    for row in rows:
        buckets.setdefault(row.get(key) or "(none)", []).append(row[value])
    return {k: {"mean": sum(v) / len(v), "n": len(v)} for k, v in buckets.items()}


def conversation(release: Release, item: Item, final_question: str, attach_images: bool) -> list[dict]:
    """The item's history turns, then `final_question`; images ride on the first user turn."""
    images = image_paths(release, item) if attach_images else []
    messages = []
    for turn in [*item.history, {"role": "user", "content": final_question}]:
        if turn["role"] == "user" and images:
            messages.append(llm.user_message(turn["content"], images=images))
            images = []
        else:
            messages.append(llm.text_message(turn["role"], turn["content"]))
    return messages
