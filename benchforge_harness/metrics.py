"""Scoring formulas (benchforge_harness/README.md, section 3): alignment, judge-human agreement, pairwise tallies, Elo, Bradley-Terry.

Pure functions over plain Python values, so every number a report prints can be checked by hand.
"""

from __future__ import annotations

import math
import random
import statistics
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

# --------------------------------------------------------------------------- alignment


@dataclass(frozen=True)
class Alignment:
    """AlignMMBench alignment score over seed groups.

    `score` is N / sum(sigma_i); infinity when every sigma is 0; None when no group qualifies.
    """

    score: float | None
    groups: int  # N: groups that entered the formula
    skipped_small: int  # groups with fewer than `min_group_size` scored questions
    sigma_sum: float
    sigmas: dict


def population_std(values: Sequence[float]) -> float:
    # statistics.pstdev works on exact fractions: identical values give exactly 0.0.
    return statistics.pstdev(values)


def alignment_score(groups: Mapping[Hashable, Sequence[float]], min_group_size: int = 2) -> Alignment:
    """sigma_i = population std of seed i's scores; Align = N / sum_i sigma_i.

    A group of one question says nothing about consistency (its sigma is 0 by construction),
    so by default it is left out of N and counted in `skipped_small` instead.
    """
    sigmas = {}
    skipped = 0
    for key, scores in groups.items():
        if len(scores) < max(min_group_size, 1):
            skipped += 1
            continue
        sigmas[key] = population_std(scores)
    n = len(sigmas)
    total = math.fsum(sigmas.values())
    if n == 0:
        score = None
    elif total == 0:
        score = math.inf
    else:
        score = n / total
    return Alignment(score=score, groups=n, skipped_small=skipped, sigma_sum=total, sigmas=sigmas)


# --------------------------------------------------------------------------- agreement

FUZZY_RANGES = ((1, 2), (3, 5), (6, 8), (9, 10))
STRICT_RANGES = ((1, 1), (2, 2), (3, 3), (4, 5), (6, 6), (7, 8), (9, 10))


def mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def mean_absolute_error(a: Sequence[float], b: Sequence[float]) -> float | None:
    _check_pairs(a, b)
    return mean([abs(x - y) for x, y in zip(a, b)])


def pearson(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Pearson r; None when either side is constant (the coefficient is undefined)."""
    _check_pairs(a, b)
    n = len(a)
    if n < 2:
        return None
    ma, mb = math.fsum(a) / n, math.fsum(b) / n
    da = [x - ma for x in a]
    db = [y - mb for y in b]
    sxx = math.fsum(x * x for x in da)
    syy = math.fsum(y * y for y in db)
    if sxx == 0 or syy == 0:
        return None
    return math.fsum(x * y for x, y in zip(da, db)) / math.sqrt(sxx * syy)


def average_ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks; tied values share the mean of the ranks they occupy."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        shared = (i + j) / 2 + 1
        for k in range(i, j + 1):
            ranks[order[k]] = shared
        i = j + 1
    return ranks


def spearman(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Spearman rho: Pearson r of the average ranks (the tie-correct definition)."""
    _check_pairs(a, b)
    return pearson(average_ranks(a), average_ranks(b))


def kendall_tau_b(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Kendall tau-b (tie-adjusted) in O(n log n) by counting inversions (Knight's method).

    tau_b = (C - D) / sqrt((n0 - n1)(n0 - n2)) with n0 = n(n-1)/2, n1/n2 the pairs tied in a/b.
    None when one side is constant.
    """
    _check_pairs(a, b)
    n = len(a)
    if n < 2:
        return None
    pairs = sorted(zip(a, b))
    n0 = n * (n - 1) // 2
    n1 = _tied_pairs([x for x, _ in pairs])
    n3 = _tied_pairs(pairs)  # tied in both
    ys = [y for _, y in pairs]
    swaps = _count_inversions(ys)  # ys is sorted in place by the count
    n2 = _tied_pairs(ys)
    denominator = math.sqrt((n0 - n1) * (n0 - n2))
    if denominator == 0:
        return None
    # Pairs tied only in b are neither concordant nor discordant; inversions are exactly D.
    concordant_minus_discordant = n0 - n1 - n2 + n3 - 2 * swaps
    return concordant_minus_discordant / denominator


def _tied_pairs(sorted_values: Sequence) -> int:
    total, run = 0, 1
    for i in range(1, len(sorted_values) + 1):
        if i < len(sorted_values) and sorted_values[i] == sorted_values[i - 1]:
            run += 1
        else:
            total += run * (run - 1) // 2
            run = 1
    return total


def _count_inversions(values: list) -> int:
    """Strict inversions (i < j, v[i] > v[j]); bottom-up merge sort, sorts `values` in place."""
    n = len(values)
    buffer = values[:]
    inversions = 0
    width = 1
    src, dst = values, buffer
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i, j, k = lo, mid, lo
            while i < mid and j < hi:
                if src[j] < src[i]:
                    dst[k] = src[j]
                    inversions += mid - i
                    j += 1
                else:
                    dst[k] = src[i]
                    i += 1
                k += 1
            dst[k:hi] = src[i:mid] if i < mid else src[j:hi]
        src, dst = dst, src
        width *= 2
    if src is not values:
        values[:] = src
    return inversions


def score_range(score: float, ranges: Sequence[tuple[int, int]]) -> int:
    """Index of the range holding `score`; a value between two ranges (2.5) goes to the upper one."""
    for index, (_, high) in enumerate(ranges):
        if score <= high:
            return index
    return len(ranges) - 1


def range_accuracy(a: Sequence[float], b: Sequence[float], ranges: Sequence[tuple[int, int]]) -> float | None:
    _check_pairs(a, b)
    if not a:
        return None
    same = sum(score_range(x, ranges) == score_range(y, ranges) for x, y in zip(a, b))
    return same / len(a)


def agreement(judge: Sequence[float], human: Sequence[float]) -> dict:
    """The six AlignMMBench Table 2 numbers: e, r, rho, tau, fuzzy f and strict s."""
    return {
        "n": len(judge),
        "mae": mean_absolute_error(judge, human),
        "pearson": pearson(judge, human),
        "spearman": spearman(judge, human),
        "kendall_tau_b": kendall_tau_b(judge, human),
        "fuzzy_accuracy": range_accuracy(judge, human, FUZZY_RANGES),
        "strict_accuracy": range_accuracy(judge, human, STRICT_RANGES),
    }


RANGE_RULE = (
    "A score between two ranges (a half point such as 2.5 or 8.5) counts in the upper one: 2.5 is in "
    "fuzzy 3-5 and strict 3; 5.5 in fuzzy 6-8 and strict 6; 8.5 in fuzzy 9-10 and strict 9-10."
)


def why_no_correlation(
    a: Sequence[float], b: Sequence[float], first: str = "judge score", second: str = "human score", pairs: str = "pair"
) -> str | None:
    """Why a correlation of a and b (Pearson, Spearman, Kendall) is undefined, in words; None when it
    is defined: fewer than two pairs, or one side constant (no variance to correlate, as when two
    models tie on a win rate)."""
    _check_pairs(a, b)
    if len(a) < 2:
        return f"only {len(a)} {pairs}: a correlation needs at least two"
    for values, name in ((a, first), (b, second)):
        if len(set(values)) == 1:
            shown = f"{values[0]:g}" if isinstance(values[0], (int, float)) else str(values[0])
            return f"every {name} is {shown}: a constant has no correlation"
    return None


def undefined_correlations(judge: Sequence[float], human: Sequence[float]) -> dict[str, str]:
    """Why Pearson r, Spearman rho and Kendall tau-b are undefined here (empty when they are not):
    fewer than two pairs, or one side constant (no variance to correlate)."""
    why = why_no_correlation(judge, human)
    return dict.fromkeys(("pearson", "spearman", "kendall_tau_b"), why) if why else {}


def _check_pairs(a: Sequence, b: Sequence) -> None:
    if len(a) != len(b):
        raise ValueError(f"paired scores differ in length: {len(a)} vs {len(b)}")


# --------------------------------------------------------------------------- human raters


def matching_share(a: Sequence, b: Sequence) -> float | None:
    """Share of positions where the two sequences hold the same value (an extractor's accuracy
    against people, two raters' raw agreement); None when there is nothing to compare."""
    _check_pairs(a, b)
    return sum(x == y for x, y in zip(a, b)) / len(a) if a else None


def rater_pair_matching(ratings: Mapping[Hashable, Mapping[Hashable, Hashable]]) -> dict[tuple, dict]:
    """MLLM-Bench Table 15: for every pair of raters, the share of the items both rated on which
    they gave the same value. ratings: {rater: {item: value}}; {(rater_a, rater_b): {"n", "agreement"}}
    with rater_a < rater_b (sorted by str), pairs that share no item included with agreement None."""
    names = sorted(ratings, key=str)
    table = {}
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            shared = [k for k in ratings[a] if k in ratings[b]]
            table[(a, b)] = {
                "n": len(shared),
                "agreement": matching_share([ratings[a][k] for k in shared], [ratings[b][k] for k in shared]),
            }
    return table


def krippendorff_alpha(units: Mapping[Hashable, Sequence], level: str = "nominal") -> float | None:
    """Krippendorff's alpha over units (items) each holding the values its raters gave.

    alpha = 1 - D_o / D_e over the pairable values (units with at least two values): D_o is the
    mean within-unit disagreement, each unit's ordered pairs weighted 1/(m_u - 1); D_e the
    disagreement between all ordered pairs of pairable values, n(n-1) of them. delta^2 is 0/1
    ("nominal": votes) or the squared difference ("interval": 1-10 scores). None when no unit
    has two values or every value is the same (no variation: alpha is undefined)."""
    if level not in ("nominal", "interval"):
        raise ValueError(f"unknown level {level!r}: nominal or interval")

    def delta(x, y) -> float:
        return float(x != y) if level == "nominal" else (float(x) - float(y)) ** 2

    pairable = [list(values) for values in units.values() if len(values) >= 2]
    values = [v for unit in pairable for v in unit]
    n = len(values)
    if n < 2:
        return None
    observed = math.fsum(
        math.fsum(delta(x, y) for i, x in enumerate(unit) for j, y in enumerate(unit) if i != j) / (len(unit) - 1)
        for unit in pairable
    )
    if level == "nominal":
        counts: dict = defaultdict(int)
        for v in values:
            counts[v] += 1
        between = n * n - sum(c * c for c in counts.values())
    else:
        floats = [float(v) for v in values]
        between = 2 * n * math.fsum(v * v for v in floats) - 2 * math.fsum(floats) ** 2
    if between == 0:
        return None
    return 1 - (observed / n) / (between / (n * (n - 1)))


def mllm_majority(votes: Sequence[str], first: str = "model", second: str = "anchor") -> str | None:
    """MLLM-Bench's majority of several raters' votes on one answer pair: `first`, `second`, or
    "unable" when the two sides have as many votes, or more raters were unable to decide (any
    other value) than voted for either side. None for no votes."""
    if not votes:
        return None
    for_first = sum(v == first for v in votes)
    for_second = sum(v == second for v in votes)
    unable = len(votes) - for_first - for_second
    if for_first == for_second or unable > max(for_first, for_second):
        return "unable"
    return first if for_first > for_second else second


def vote_agreement(
    judge: Mapping[Hashable, str], raters: Mapping[Hashable, Mapping[Hashable, str]], first: str = "model", second: str = "anchor"
) -> dict:
    """Judge-human agreement on votes, MLLM-Bench style. judge: {item: outcome}; raters: {rater:
    {item: vote}}, outcomes and votes in {first, second, anything else = unable to decide}.

    "individual": the mean over raters of each rater's share of items matching the judge;
    "majority": the share of items whose majority vote (mllm_majority) matches the judge;
    "per_rater": each rater's share and n."""

    def side(value):
        return value if value in (first, second) else "unable"

    per_rater = {}
    for rater, votes in raters.items():
        shared = [k for k in votes if k in judge]
        per_rater[rater] = {
            "n": len(shared),
            "agreement": matching_share([side(votes[k]) for k in shared], [side(judge[k]) for k in shared]),
        }
    by_item: dict = defaultdict(list)
    for votes in raters.values():
        for k, v in votes.items():
            if k in judge:
                by_item[k].append(v)
    majority = [(mllm_majority(vs, first, second), side(judge[k])) for k, vs in by_item.items()]
    shares = [r["agreement"] for r in per_rater.values() if r["agreement"] is not None]
    return {
        "items": len(majority),
        "individual": mean(shares),
        "majority": matching_share([m for m, _ in majority], [j for _, j in majority]),
        "per_rater": per_rater,
    }


def plurality(values: Sequence[Hashable]) -> Hashable | None:
    """The value given most often; None when none is given or two values tie for most (people
    did not settle on one reading)."""
    counts = Counter(values).most_common(2)
    if not counts or (len(counts) == 2 and counts[0][1] == counts[1][1]):
        return None
    return counts[0][0]


def reader_accuracy(readings: Mapping[Hashable, Hashable], raters: Mapping[Hashable, Mapping[Hashable, Hashable]]) -> dict:
    """An answer reader's accuracy against people (MMBench checked its choice extractor this way).
    readings: {item: what the reader read}; raters: {rater: {item: what they read}}.

    "accuracy": the share of the items with a plurality reading among the raters (plurality; a
    tie leaves the item out, counted in "ties") on which the reader read the same;
    "individual": the mean over raters of each rater's share of items matching the reader."""
    shares = []
    by_item: dict = defaultdict(list)
    for read in raters.values():
        shared = [k for k in read if k in readings]
        for k in shared:
            by_item[k].append(read[k])
        share = matching_share([read[k] for k in shared], [readings[k] for k in shared])
        if share is not None:
            shares.append(share)
    settled = [(plurality(vs), readings[k]) for k, vs in by_item.items()]
    decided = [(m, r) for m, r in settled if m is not None]
    return {
        "items": len(decided),
        "ties": len(settled) - len(decided),
        "accuracy": matching_share([m for m, _ in decided], [r for _, r in decided]),
        "individual": mean(shares),
    }


# --------------------------------------------------------------------------- pairwise tallies

WIN, TIE, LOSE, FAILED = "win", "tie", "lose", "failed"


def win_tie_lose(outcomes: Iterable[tuple[str, str]]) -> dict:
    """Tally (group, result) pairs into {group: {win, tie, lose, failed, total, win_rate}}.

    win_rate = wins / all questions of the group, failed ones included (they are not wins).
    """
    table: dict[str, dict] = defaultdict(lambda: {WIN: 0, TIE: 0, LOSE: 0, FAILED: 0})
    for group, result in outcomes:
        if result not in (WIN, TIE, LOSE, FAILED):
            raise ValueError(f"unknown pairwise result {result!r}")
        table[group][result] += 1
    for row in table.values():
        row["total"] = row[WIN] + row[TIE] + row[LOSE] + row[FAILED]
        row["win_rate"] = row[WIN] / row["total"] if row["total"] else None
    return dict(table)


# --------------------------------------------------------------------------- Elo and Bradley-Terry

# A battle is (model_a, model_b, score_a): 1 when a wins, 0 when b wins, 0.5 for a tie.
Battle = tuple[str, str, float]


@dataclass(frozen=True)
class EloSettings:
    k: float = 4.0
    scale: float = 400.0
    base: float = 10.0
    initial: float = 1000.0


def elo_ratings(battles: Sequence[Battle], settings: EloSettings = EloSettings()) -> dict[str, float]:
    """Online Elo over the battles in the given order."""
    names, encoded = _encode(battles)
    ratings = _elo_pass(encoded, len(names), settings)
    return dict(zip(names, ratings))


def bootstrap_elo(
    battles: Sequence[Battle], rounds: int = 1000, seed: int = 0, settings: EloSettings = EloSettings()
) -> dict[str, dict]:
    """Resample the battles with replacement `rounds` times, rerun Elo, report median and 95% interval."""
    names, encoded = _encode(battles)
    if not encoded:
        return {}
    rng = random.Random(seed)
    n = len(encoded)
    per_model: list[list[float]] = [[] for _ in names]
    for _ in range(rounds):
        sample = rng.choices(encoded, k=n)
        for index, rating in enumerate(_elo_pass(sample, len(names), settings)):
            per_model[index].append(rating)
    result = {}
    for name, ratings in zip(names, per_model):
        ratings.sort()
        result[name] = {
            "median": statistics.median(ratings),
            "ci95": [_quantile(ratings, 0.025), _quantile(ratings, 0.975)],
        }
    return result


def _elo_pass(encoded: Sequence[tuple[int, int, float]], count: int, s: EloSettings) -> list[float]:
    ratings = [s.initial] * count
    k, scale, base = s.k, s.scale, s.base
    for a, b, score_a in encoded:
        expected_a = 1.0 / (1.0 + base ** ((ratings[b] - ratings[a]) / scale))
        delta = k * (score_a - expected_a)
        ratings[a] += delta
        ratings[b] -= delta
    return ratings


def _encode(battles: Sequence[Battle]) -> tuple[list[str], list[tuple[int, int, float]]]:
    index: dict[str, int] = {}
    encoded = []
    for a, b, score_a in battles:
        if a == b:
            raise ValueError(f"a model cannot battle itself: {a!r}")
        if score_a not in (0, 0.5, 1):
            raise ValueError(f"battle score must be 0, 0.5 or 1, got {score_a!r}")
        encoded.append((index.setdefault(a, len(index)), index.setdefault(b, len(index)), float(score_a)))
    return list(index), encoded


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    position = (len(sorted_values) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def bradley_terry(
    battles: Sequence[Battle],
    settings: EloSettings = EloSettings(),
    max_iterations: int = 10_000,
    tolerance: float = 1e-10,
) -> dict[str, float | None]:
    """Maximum-likelihood Bradley-Terry strengths on the Elo scale (ties count half a win each side).

    Fitted with the MM algorithm (Hunter 2004). Ratings are `initial + scale * log_base(p)` with the
    geometric mean of p fixed at 1, so the average rating is `initial`. A model that never lost
    has no finite MLE: it is reported as +inf (never won: -inf) and its battles are set aside;
    a model left with no battles after that is reported as None.
    """
    names, encoded = _encode(battles)
    ratings: dict[str, float] = {}
    active = set(range(len(names)))
    while True:
        wins = defaultdict(float)
        games = defaultdict(float)
        for a, b, score_a in encoded:
            if a in active and b in active:
                wins[a] += score_a
                wins[b] += 1 - score_a
                games[a] += 1
                games[b] += 1
        unbounded = {i: (math.inf if wins[i] == games[i] else -math.inf) for i in active if games[i] and wins[i] in (0, games[i])}
        for i in [i for i in active if not games[i]]:
            ratings[names[i]] = None  # every opponent was set aside: nothing left to rate against
            active.discard(i)
        if not unbounded:
            break
        for i, value in unbounded.items():
            ratings[names[i]] = value
            active.discard(i)
    pair_games: dict[tuple[int, int], float] = defaultdict(float)
    for a, b, _ in encoded:
        if a in active and b in active:
            pair_games[(a, b)] += 1
    strength = {i: 1.0 for i in active}
    for _ in range(max_iterations if active else 0):
        denominators = defaultdict(float)
        for (a, b), count in pair_games.items():
            share = count / (strength[a] + strength[b])
            denominators[a] += share
            denominators[b] += share
        updated = {i: wins[i] / denominators[i] for i in active}
        log_mean = math.fsum(math.log(v) for v in updated.values()) / len(updated)
        updated = {i: v / math.exp(log_mean) for i, v in updated.items()}
        change = max(abs(math.log(updated[i] / strength[i])) for i in active)
        strength = updated
        if change < tolerance:
            break
    for i in active:
        ratings[names[i]] = settings.initial + settings.scale * math.log(strength[i], settings.base)
    return {name: ratings[name] for name in names}


def finite(value):
    """NaN and infinity as None (JSON null), at any depth: for results stored in a JSON column
    (e.g. an alignment score with no spread)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value
