"""The anchor split of a release: k items chosen from the scored models' results (benchforge_harness.anchors
chooses and estimates; the item response model is fitted here, analysis.irt), and its validation by
leaving one model out: anchors chosen from the other models' results, the held-out model's full
score estimated from its results on them, against its real score; and the same for stratified
random samples of k items (plain stratified means), many draws."""

import math
import random

import numpy as np

from benchforge_harness import anchors as harness_anchors

from . import irt

DRAWS = 200
MIN_MODELS_TO_VALIDATE = 4  # three to choose from, one to predict


def _items(fit: irt.Fit, keys: list[str]) -> dict[str, tuple[float, float]]:
    return {key: (float(fit.a[i]), float(fit.b[i])) for i, key in enumerate(keys)}


def _observed(results: np.ndarray, keys: list[str], model: int) -> dict[str, float]:
    row = results[model]
    return {key: float(row[i]) for i, key in enumerate(keys) if not math.isnan(row[i])}


def choose(results: np.ndarray, keys: list[str], groups: dict[str, tuple[str, str]], k: int, *, seed, fit=None):
    """(split items {key: (a, b)}, anchors, strata kind, fit) from `results` (models x items)."""
    fit = fit or irt.fit(results)
    items = _items(fit, keys)
    kind, strata = harness_anchors.strata_of(groups, k)
    chosen = harness_anchors.best_anchors(items, strata, k, fit.theta.tolist(), seed=seed)
    return items, chosen, kind, fit


def _random_samples(strata: dict[str, str], keys: list[str], k: int, draws: int, seed) -> np.ndarray:
    """(draws x items) weights of stratified random samples of k items: the plain stratified mean of a
    sample is weights @ results (strata left out of a sample are left out of its mean)."""
    members: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        members.setdefault(strata[key], []).append(i)
    names = sorted(members)
    rng = random.Random(f"random-samples:{seed}")
    weights = np.zeros((draws, len(keys)))
    for d in range(draws):
        shares = harness_anchors.allocate(k, {name: len(members[name]) for name in names}, rng)
        covered = sum(len(members[name]) for name in names if shares[name])
        for name in names:
            if shares[name]:
                for i in rng.sample(members[name], shares[name]):
                    weights[d, i] = len(members[name]) / shares[name] / covered
    return weights


def validate(results: np.ndarray, keys: list[str], groups: dict[str, tuple[str, str]], labels: list[str], k: int, *, seed):
    """Leave each model out in turn. Returns {"models": [{"label", "score", "estimate", "low",
    "high", "error", "random_median_error"}], "mae", "random": {"median_mae", "mae_quartiles",
    "draws", "share_better_than_anchors"}, "coverage", "interval_scale"} or None (too few models)."""
    n_models = results.shape[0]
    if n_models < MIN_MODELS_TO_VALIDATE:
        return None
    _kind, strata = harness_anchors.strata_of(groups, k)
    weights = _random_samples(strata, keys, k, DRAWS, seed)
    present = ~np.isnan(results)
    filled = np.where(present, results, 0.0)
    rows, standardised = [], []
    random_errors = np.zeros((DRAWS, n_models))
    for m in range(n_models):
        others = [i for i in range(n_models) if i != m]
        items, chosen, _kind, _fit = choose(results[others], keys, groups, k, seed=seed)
        observed = _observed(results, keys, m)
        truth = float(filled[m].sum() / max(present[m].sum(), 1))
        split = harness_anchors.Split("validation", "", 1.0, chosen, items)
        guess = harness_anchors.estimate(split, {key: observed[key] for key in chosen if key in observed})
        # The plain stratified mean of each random sample, over the items this model has results on.
        sampled = (weights * present[m]) @ filled[m] / np.maximum((weights * present[m]).sum(1), 1e-12)
        random_errors[:, m] = np.abs(sampled - truth)
        if guess.sd > 0:
            standardised.append((guess.value - truth) / guess.sd)
        rows.append(
            {
                "label": labels[m],
                "score": truth,
                "estimate": guess.value,
                "low": guess.low,
                "high": guess.high,
                "error": abs(guess.value - truth),
                "random_median_error": float(np.median(random_errors[:, m])),
                "inside": guess.low <= truth <= guess.high,
            }
        )
    mae = float(np.mean([r["error"] for r in rows]))
    per_draw = random_errors.mean(1)
    # Widen the interval when the held-out models' errors were larger than it promised (never narrow it).
    scale = max(1.0, float(np.sqrt(np.mean(np.square(standardised))))) if standardised else 1.0
    return {
        "models": rows,
        "mae": mae,
        "max_error": float(max(r["error"] for r in rows)),
        "coverage": float(np.mean([r["inside"] for r in rows])),
        "interval_scale": scale,
        "random": {
            "draws": DRAWS,
            "median_mae": float(np.median(per_draw)),
            "mae_quartiles": [float(np.quantile(per_draw, q)) for q in (0.25, 0.75)],
            "share_better_than_anchors": float(np.mean(per_draw < mae)),
            "strata": len(set(strata.values())),
        },
    }
