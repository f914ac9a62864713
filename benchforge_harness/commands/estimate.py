"""`estimate`: a model's full score predicted from its results on an anchor split (benchforge_harness.anchors)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchforge_harness.anchors import estimate, read_split, split_path
from benchforge_harness.commands import common
from benchforge_harness.io import InputError, iter_jsonl
from benchforge_harness.release import load_release
from benchforge_harness.scoring import MODES

NAME = "estimate"
ROW_FILES = ("calls.jsonl", "samples.jsonl")  # where `mcq` keeps its calls; where a judge command does

DESCRIPTION = """\
Predict a model's score on the whole release from its results on an anchor split only:
  python -m benchforge_harness pairwise --split pairwise-anchors --judge J --anchor A.jsonl --predictions P.jsonl
  python -m benchforge_harness estimate --split pairwise-anchors --results results/pairwise
The split (splits/NAME.json in the bundle) was chosen from the results of the models scored when the
release's owners made it; its file and the dataset card say how, and how well it predicted them.
"""


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        NAME,
        help="predict the full score from a run on an anchor split",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    common.add_release_option(parser)
    parser.add_argument("--results", required=True, metavar="DIR", help="output folder of the scoring run on the split")
    parser.add_argument("--model", metavar="NAME", help="the model to estimate (default: the run's only model)")
    parser.add_argument("--json", action="store_true", help="print the estimate as JSON")
    parser.set_defaults(run=run)


def run(args) -> int:
    if not args.split:
        raise InputError("name the anchor split with --split (e.g. pairwise-anchors: splits/pairwise-anchors.json)")
    split = read_split(split_path(args.release, args.split))
    folder = Path(args.results)
    results_file = folder / "results.json"
    if not results_file.exists():
        raise InputError(f"{results_file}: file not found (run the scoring command with --split {args.split} first)")
    results = json.loads(results_file.read_text(encoding="utf-8"))
    mode = next((m for m in MODES.values() if m.command and m.command == results.get("command")), None)
    if mode is None or mode.name != split.mode:
        raise InputError(
            f"{results_file} holds a {results.get('command')!r} run; split {split.name!r} predicts "
            f"{split.mode!r} scores: score it with `{MODES[split.mode].command}`"
        )
    models = list(results.get("models") or {})
    model = args.model or (models[0] if len(models) == 1 else None)
    if model is None or model not in models:
        raise InputError(f"name the model with --model (the run scored: {', '.join(models) or 'none'})")
    found = next((folder / name for name in ROW_FILES if (folder / name).exists()), None)
    if found is None:
        raise InputError(f"{folder}: no {' or '.join(ROW_FILES)} (the rows of the run)")
    rows = {row["key"]: row for row in iter_jsonl(found) if "key" in row}
    items = load_release(args.release, split=args.split).items
    per_item = mode.item_results(rows, items, model)
    guess = estimate(split, {key: value for key, (value, _label) in per_item.items()})
    if args.json:
        print(json.dumps({"model": model, "split": split.name, "mode": split.mode, **guess.as_dict()}, indent=2))
        return 0
    low, high = guess.interval
    shown = (lambda v: f"{100 * v:.1f}%") if split.scale == 1 else (lambda v: f"{v:.2f} / {split.scale:g}")
    common.say(
        f"estimate: {model} on the whole release: {shown(guess.headline)} "
        f"({100 * guess.level:.0f}% interval {shown(low)} to {shown(high)}), "
        f"from {guess.anchors} of {len(split.anchors)} anchors"
        + (f"; {guess.missing} anchors had no result and were predicted" if guess.missing else "")
    )
    return 0
