"""Item analysis: how well an anchor split predicts (MLLM-Bench, leaving each model out) and what the
job's computing costs at 10,000 items and 20 models.

Run: .venv/bin/python bench/item_analysis.py [--fixtures DIR] [--k 60] [--seeds 20] [--items 10000] [--models 20]

  * MLLM-Bench (DIR/mllm-bench: 420 questions, 9 models judged against an anchor in both orders):
    for each model in turn, the anchors are chosen from the other eight models' results, its win
    rate is estimated from its results on the k anchors (benchforge_harness.anchors), and compared
    with its real win rate; against 200 stratified random samples of k items (plain stratified
    means). Target: mean absolute error <= 0.05 and below the random samples' median. With
    --seeds N it repeats the choice with N seeds (the release's split seed) to show the spread.
  * Scale: a synthetic release (--items x --models, results drawn from a two-parameter model):
    the item figures and flags, the item response fit, choosing k=100 anchors, and the
    leave-one-out validation, each with its CPU time (one process; numpy vectorised).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from analysis import irt, splits, statistics  # noqa: E402


def timed(label: str, run):
    wall, cpu = time.perf_counter(), time.process_time()
    found = run()
    print(f"  {label}: {1000 * (time.process_time() - cpu):,.0f} ms CPU, {1000 * (time.perf_counter() - wall):,.0f} ms wall")
    return found


def mllm_bench(folder: Path, k: int, seeds: int) -> None:
    from tests.analysis.mllm_bench import load

    labels, keys, groups, values = load(folder)
    print(f"== MLLM-Bench: {values.shape[1]} questions, {values.shape[0]} models, k={k}, leave one model out")
    found = timed(
        "validation (9 fits, 9 choices, 200 random samples)", lambda: splits.validate(values, keys, groups, labels, k, seed=0)
    )
    print(f"  {'model':44} {'win rate':>8} {'estimate':>8} {'90% interval':>15} {'error':>6} {'random median':>13}")
    for row in found["models"]:
        print(
            f"  {row['label']:44} {row['score']:8.3f} {row['estimate']:8.3f} {row['low']:7.3f}-{row['high']:<7.3f} "
            f"{row['error']:6.3f} {row['random_median_error']:13.3f}"
        )
    random = found["random"]
    print(
        f"  anchors (seed 0): mean absolute error {found['mae']:.4f} (largest {found['max_error']:.3f}); interval held "
        f"{100 * found['coverage']:.0f}% of the models"
    )
    print(
        f"  {random['draws']} stratified random samples of {k}: median of their mean absolute error {random['median_mae']:.4f} "
        f"(quartiles {random['mae_quartiles'][0]:.4f}-{random['mae_quartiles'][1]:.4f}); "
        f"{100 * random['share_better_than_anchors']:.0f}% of the draws did better than the anchors"
    )
    ok = found["mae"] <= 0.05 and found["mae"] < random["median_mae"]
    print(f"  target (<= 0.05 and below the random median): {'met' if ok else 'NOT met'}")
    if seeds > 1:
        rows = [splits.validate(values, keys, groups, labels, k, seed=s) for s in range(seeds)]
        maes = np.array([r["mae"] for r in rows])
        medians = np.array([r["random"]["median_mae"] for r in rows])
        print(
            f"  over seeds 0-{seeds - 1}: mean absolute error {maes.mean():.4f} (min {maes.min():.4f}, max {maes.max():.4f}); "
            f"below the random median for {int((maes < medians).sum())} of {seeds} seeds; "
            f"mean interval coverage {100 * np.mean([r['coverage'] for r in rows]):.0f}%"
        )


def scale(n_items: int, n_models: int) -> None:
    rng = np.random.default_rng(0)
    a, b, theta = np.exp(rng.normal(0, 0.4, n_items)), rng.normal(0, 1.2, n_items), rng.normal(0, 1, n_models)
    values = (rng.random((n_models, n_items)) < 1 / (1 + np.exp(-a * (theta[:, None] - b)))).astype(float)
    values[rng.random(values.shape) < 0.01] = np.nan  # a few items a model has no result on
    keys = [str(i) for i in range(n_items)]
    groups = {key: (f"task {i % 50}", f"category {i % 6}") for i, key in enumerate(keys)}
    labels = [f"model {m}" for m in range(n_models)]
    print(f"== Scale: {n_items:,} items x {n_models} models (synthetic)")
    found = timed("figures and flags (with the item response fit)", lambda: statistics.figures(values))
    timed("flags", lambda: statistics.flags(values, found, np.zeros(n_items), np.full(n_items, np.nan)))
    fit = timed("item response fit alone", lambda: irt.fit(values))
    print(f"    fit: {fit.iterations} iterations; correlation of fitted and true difficulty {np.corrcoef(fit.b, b)[0, 1]:.3f}")
    timed("choosing 100 anchors", lambda: splits.choose(values, keys, groups, 100, seed=0, fit=fit))
    checked = timed(
        f"validation ({n_models} fits and choices, 200 random samples)",
        lambda: splits.validate(values, keys, groups, labels, 100, seed=0),
    )
    print(f"    mean absolute error {checked['mae']:.4f}, random samples' median {checked['random']['median_mae']:.4f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default = os.environ.get("BENCHFORGE_SHARED_FIXTURES") or str(ROOT.parent / "shared" / "fixtures")
    parser.add_argument("--fixtures", default=default, help="folder holding mllm-bench/ (default: ../shared/fixtures)")
    parser.add_argument("--k", type=int, default=60)
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--models", type=int, default=20)
    args = parser.parse_args()
    folder = Path(args.fixtures) / "mllm-bench"
    if folder.exists():
        mllm_bench(folder, args.k, args.seeds)
    else:
        print(f"== MLLM-Bench: skipped, {folder} is absent (--fixtures)")
    scale(args.items, args.models)
    print(f"(load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}; {math.floor(os.cpu_count() or 1)} cores)")


if __name__ == "__main__":
    main()
