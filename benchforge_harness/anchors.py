"""Anchor splits: a small set of a release's items whose results predict a model's full score.

A release's owners choose k anchor items from the results of the models already scored on it
(the platform's item analysis fits a two-parameter item response model to them: each item i has a
discrimination a_i and a difficulty b_i, each model an ability theta, and
P(right) = 1 / (1 + exp(-a_i (theta - b_i)))). The split file (splits/<name>.json in a bundle,
SPLIT_FORMAT) holds the anchors and every calibrated item's (a, b); this module, pure Python,
turns a model's results on the anchors into an estimate of its full score with an interval:

    split = read_split("splits/pairwise-anchors.json")
    found = estimate(split, {"17": 1.0, "42": 0.0, ...})     # the model's results on the anchors
    found.headline, found.low, found.high                     # on the mode's scale (a share, or /10)

The estimate (tinyBenchmarks' p-IRT, Polo et al. 2024): the model's ability is the most likely
theta given its anchor results (a weak normal prior keeps it finite when it gets every anchor
right); its full score is the anchors' observed results plus every other item's predicted
probability at that theta, over all calibrated items. The interval adds the uncertainty of theta
(delta method) and the chance in the items not asked, widened by the factor the split's
validation found necessary (`interval_scale`).

How anchors are chosen (choose_anchors): k is shared out over strata (tasks; their categories
when k is smaller than the number of tasks; none when smaller still) in proportion to their size,
and within a stratum the items, sorted by difficulty b, are taken at evenly spaced places from a
seeded random start (a systematic sample over difficulty), so the anchors span every task and the
whole range of difficulty. best_anchors draws several such samples and keeps the one whose
estimate the fitted model expects to be closest at the abilities of the models it was fitted on
(expected_error): a criterion of the model's parameters, not of those models' answers on the
candidate items, so it does not pick the sample that happened to suit them.
"""

from __future__ import annotations

import json
import math
import os
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from benchforge_harness.io import InputError

SPLIT_FORMAT = "benchforge-anchors/1"
SPLITS_FOLDER = "splits"
LEVEL = 0.9  # the interval's coverage
THETA_PRIOR = (0.0, 3.0)  # mean, sd: wide, only keeps a perfect or a zero score finite
NEWTON_STEPS = 50

__all__ = [
    "LEVEL",
    "SPLITS_FOLDER",
    "SPLIT_FORMAT",
    "Estimate",
    "Split",
    "allocate",
    "best_anchors",
    "choose_anchors",
    "expected_error",
    "estimate",
    "probability",
    "read_split",
    "split_path",
    "strata_of",
]


@dataclass
class Split:
    """An anchor split: `anchors` (item ids), `items` {item id: (a, b)} of every calibrated item,
    the mode whose per-item results it takes (benchforge_harness.scoring.MODES) and that mode's
    `scale` (1: a share; 10: a grade), `interval_scale` (>= 1), and `about` (how it was chosen and
    validated, for people)."""

    name: str
    mode: str
    scale: float
    anchors: list[str]
    items: dict[str, tuple[float, float]]
    interval_scale: float = 1.0
    theta_prior: tuple[float, float] = THETA_PRIOR
    about: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "format": SPLIT_FORMAT,
            "name": self.name,
            "mode": self.mode,
            "scale": self.scale,
            "anchors": list(self.anchors),
            "items": {key: [round(a, 6), round(b, 6)] for key, (a, b) in self.items.items()},
            "interval_scale": self.interval_scale,
            "theta_prior": list(self.theta_prior),
            "about": self.about,
        }

    @classmethod
    def from_dict(cls, data: Mapping, *, source: str = "split") -> Split:
        if not isinstance(data, Mapping) or data.get("format") != SPLIT_FORMAT:
            raise InputError(f'{source}: not an anchor split (expected "format": "{SPLIT_FORMAT}")')
        try:
            items = {str(key): (float(a), float(b)) for key, (a, b) in data["items"].items()}
            anchors = [str(key) for key in data["anchors"]]
            split = cls(
                name=str(data["name"]),
                mode=str(data["mode"]),
                scale=float(data.get("scale", 1)),
                anchors=anchors,
                items=items,
                interval_scale=float(data.get("interval_scale", 1.0)),
                theta_prior=tuple(float(x) for x in data.get("theta_prior", THETA_PRIOR)),
                about=dict(data.get("about") or {}),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"{source}: malformed anchor split ({exc.__class__.__name__}: {exc})") from None
        unknown = [key for key in anchors if key not in items]
        if unknown:
            raise InputError(f"{source}: anchor {unknown[0]!r} has no item parameters")
        if not anchors or any(a <= 0 for a, _ in items.values()) or split.theta_prior[1] <= 0:
            raise InputError(f"{source}: an anchor split needs anchors, positive discriminations and a prior sd > 0")
        return split


def split_path(release_root: str | os.PathLike, name: str) -> Path:
    """Where a bundle keeps the split `name` (a file name without .json, or a path to one)."""
    given = Path(name)
    if given.suffix == ".json" or given.parent != Path("."):
        return given if given.is_absolute() or given.exists() else Path(release_root) / given
    return Path(release_root) / SPLITS_FOLDER / f"{name}.json"


def read_split(path: str | os.PathLike) -> Split:
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: file not found (a bundle keeps its splits in {SPLITS_FOLDER}/)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"{path}: not a JSON file ({exc})") from None
    return Split.from_dict(data, source=str(path))


# ---- the item response model -----------------------------------------------------------------


def probability(theta: float, a: float, b: float) -> float:
    z = a * (theta - b)
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def fit_theta(results: Iterable[tuple[float, float, float]], prior: tuple[float, float] = THETA_PRIOR) -> tuple[float, float]:
    """(theta, its variance): the most likely ability given (result, a, b) triples, results on a
    0-1 scale (a fraction counts as that share of a right answer), under a normal prior. Newton's
    method on a concave log-posterior: it converges from any start."""
    results = list(results)
    mean, sd = prior
    theta = mean
    information = 1 / sd**2
    for _ in range(NEWTON_STEPS):
        gradient = -(theta - mean) / sd**2
        information = 1 / sd**2
        for y, a, b in results:
            p = probability(theta, a, b)
            gradient += a * (y - p)
            information += a * a * p * (1 - p)
        step = max(-1.0, min(1.0, gradient / information))
        theta += step
        if abs(step) < 1e-9:
            break
    return theta, 1 / information


@dataclass(frozen=True)
class Estimate:
    """A full score estimated from anchor results: `value`, `low`, `high`, `sd` on a 0-1 scale, `headline`
    (and its interval) on the mode's scale; `anchors` results used, `missing` anchors without a
    result (predicted like the other items), the ability `theta` and the interval's `level`."""

    value: float
    low: float
    high: float
    sd: float  # the estimate's standard deviation (0-1 scale), as the interval takes it
    scale: float
    anchors: int
    missing: int
    theta: float
    level: float = LEVEL

    @property
    def headline(self) -> float:
        return self.value * self.scale

    @property
    def interval(self) -> tuple[float, float]:
        return self.low * self.scale, self.high * self.scale

    def as_dict(self) -> dict:
        return {
            "estimate": self.headline,
            "low": self.interval[0],
            "high": self.interval[1],
            "level": self.level,
            "anchors": self.anchors,
            "missing": self.missing,
            "theta": self.theta,
        }


def _z(level: float) -> float:
    """The standard normal quantile for a two-sided interval at `level` (bisection on erf)."""
    low, high, target = 0.0, 10.0, (1 + level) / 2
    for _ in range(80):
        mid = (low + high) / 2
        low, high = (mid, high) if 0.5 * (1 + math.erf(mid / math.sqrt(2))) < target else (low, mid)
    return (low + high) / 2


def estimate(split: Split, results: Mapping[str, float], *, level: float = LEVEL) -> Estimate:
    """A model's full score from its `results` {item id: value on 0-1} on the split's anchors (results
    on other items are ignored: the estimate is what the anchors alone say)."""
    bad = [key for key, value in results.items() if value is None or not 0 <= float(value) <= 1]
    if bad:
        raise InputError(f"item {bad[0]!r}: a result must be a number from 0 to 1, got {results[bad[0]]!r}")
    used = [key for key in split.anchors if key in results]
    if not used:
        raise InputError(f"none of the split's {len(split.anchors)} anchors has a result: score the anchor items first")
    theta, theta_variance = fit_theta(
        ((float(results[key]), *split.items[key]) for key in used), (split.theta_prior[0], split.theta_prior[1])
    )
    observed = set(used)
    total = float(sum(results[key] for key in used))
    slope = chance = 0.0
    for key, (a, b) in split.items.items():
        if key in observed:
            continue
        p = probability(theta, a, b)
        total += p
        slope += a * p * (1 - p)  # d(predicted sum)/d theta
        chance += p * (1 - p)  # the spread of the results not asked
    n = len(split.items)
    value = total / n
    sd = math.sqrt(slope**2 * theta_variance + chance) / n * split.interval_scale
    half = _z(level) * sd
    return Estimate(
        value=value,
        low=max(0.0, value - half),
        high=min(1.0, value + half),
        sd=sd,
        scale=split.scale,
        anchors=len(used),
        missing=len(split.anchors) - len(used),
        theta=theta,
        level=level,
    )


# ---- choosing the anchors ----------------------------------------------------------------------


def strata_of(items: Mapping[str, tuple[str, str]], k: int) -> tuple[str, dict[str, str]]:
    """("task" | "category" | "none", {item id: its stratum}): tasks when k covers every task,
    their categories when k covers every category, else one stratum. items: {id: (task, category)}."""
    tasks = {task for task, _ in items.values()}
    categories = {category for _, category in items.values()}
    if k >= len(tasks):
        return "task", {key: task for key, (task, _) in items.items()}
    if k >= len(categories):
        return "category", {key: category for key, (_, category) in items.items()}
    return "none", dict.fromkeys(items, "")


def allocate(k: int, sizes: Mapping[str, int], rng: random.Random) -> dict[str, int]:
    """k shared out over strata in proportion to their sizes (largest remainder; ties drawn by rng)."""
    total = sum(sizes.values())
    k = min(k, total)
    quotas = {name: k * size / total for name, size in sizes.items()}
    shares = {name: int(q) for name, q in quotas.items()}
    order = sorted(quotas, key=lambda name: (-(quotas[name] - shares[name]), rng.random()))
    for name in order[: k - sum(shares.values())]:
        shares[name] += 1
    return shares


def choose_anchors(difficulty: Mapping[str, float], strata: Mapping[str, str], k: int, *, seed: int | str = 0) -> list[str]:
    """k anchor ids: shared over the strata by size, and within each stratum a systematic sample of
    its items sorted by `difficulty` (b) from a seeded random start. Reproducible from `seed`."""
    members: dict[str, list[str]] = {}
    for key in difficulty:
        members.setdefault(strata[key], []).append(key)
    rng = random.Random(f"anchors:{seed}")
    shares = allocate(k, {name: len(keys) for name, keys in sorted(members.items())}, rng)
    chosen = []
    for name in sorted(members):
        take = shares[name]
        if not take:
            continue
        ordered = sorted(members[name], key=lambda key: (difficulty[key], key))
        step = len(ordered) / take
        start = rng.random()
        chosen += [ordered[min(len(ordered) - 1, int((n + start) * step))] for n in range(take)]
    return chosen


CANDIDATES = 30


def expected_error(anchors: Iterable[str], items: Mapping[str, tuple[float, float]], thetas: Iterable[float]) -> float:
    """The estimate's standard deviation the item model expects (estimate()'s formula), averaged over
    abilities `thetas`: how well `anchors` would predict models like those."""
    return _expected_errors([list(anchors)], items, list(thetas))[0]


def _expected_errors(candidates: list[list[str]], items: Mapping[str, tuple[float, float]], thetas: list[float]) -> list[float]:
    # Whole-release sums once per ability; each candidate then only takes its anchors out of them.
    n = len(items)
    prior = 1 / THETA_PRIOR[1] ** 2
    per_theta = []
    for theta in thetas:
        terms = {}
        slope = chance = 0.0
        for key, (a, b) in items.items():
            p = probability(theta, a, b)
            terms[key] = (a * a * p * (1 - p), a * p * (1 - p), p * (1 - p))
            slope += terms[key][1]
            chance += terms[key][2]
        per_theta.append((terms, slope, chance))
    errors = []
    for anchors in candidates:
        total = 0.0
        for terms, slope, chance in per_theta:
            information = prior + sum(terms[key][0] for key in anchors)
            rest_slope = slope - sum(terms[key][1] for key in anchors)
            rest_chance = chance - sum(terms[key][2] for key in anchors)
            total += math.sqrt(max(0.0, rest_slope**2 / information + rest_chance)) / n
        errors.append(total / max(1, len(per_theta)))
    return errors


def best_anchors(
    items: Mapping[str, tuple[float, float]],
    strata: Mapping[str, str],
    k: int,
    thetas: Iterable[float],
    *,
    seed: int | str = 0,
    candidates: int = CANDIDATES,
) -> list[str]:
    """Of `candidates` stratified systematic samples (choose_anchors, seeds derived from `seed`), the
    one with the smallest expected_error at `thetas` (the abilities of the models the item
    parameters were fitted on). Reproducible from `seed`."""
    difficulty = {key: b for key, (_a, b) in items.items()}
    drawn = [choose_anchors(difficulty, strata, k, seed=f"{seed}:{n}") for n in range(max(1, candidates))]
    errors = _expected_errors(drawn, items, list(thetas))
    return drawn[min(range(len(drawn)), key=lambda n: (errors[n], n))]
