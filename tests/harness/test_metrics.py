"""Formulas of METHODS.md 7 against values worked out by hand (see the comments)."""

import itertools
import math
import random

import pytest

from benchforge_harness import metrics
from benchforge_harness.metrics import (
    EloSettings,
    alignment_score,
    bootstrap_elo,
    bradley_terry,
    elo_ratings,
)
from benchforge_harness.votes import (
    ANCHOR,
    MODEL,
    SPLIT,
    UNABLE,
    UNABLE_ONE_SIDE,
    UNABLE_TWO_SIDE,
    battle_score,
    combine_sides,
    outcome_result,
    vote_side,
)

# ------------------------------------------------------------------ alignment


def test_alignment_is_groups_over_sum_of_population_stds():
    result = alignment_score(
        {
            "g1": [5, 7],  # mean 6, sigma = sqrt((1 + 1) / 2) = 1
            "g2": [3, 3, 3],  # sigma 0
            "g3": [2, 4, 6, 8],  # mean 5, sigma = sqrt((9 + 1 + 1 + 9) / 4) = sqrt(5)
            "g4": [9],  # a group of one: no information about consistency
        }
    )
    # N = 3 groups; 3 / (1 + 0 + sqrt 5) = 0.92705...
    assert result.groups == 3
    assert result.skipped_small == 1
    assert result.score == pytest.approx(0.9270509831248422, rel=1e-12)
    assert result.sigmas["g1"] == 1
    assert result.sigmas["g3"] == pytest.approx(math.sqrt(5))


def test_population_not_sample_std():
    # sample std of [1, 3] would be sqrt(2); the population std is 1.
    assert alignment_score({"g": [1, 3]}).score == 1.0


def test_all_sigmas_zero_is_infinity_not_a_division_error():
    result = alignment_score({"a": [7, 7, 7], "b": [2, 2], "c": [0.1, 0.1, 0.1]})
    assert result.score == math.inf
    assert result.groups == 3 and result.sigma_sum == 0


def test_only_groups_of_one_give_no_score():
    result = alignment_score({"a": [7], "b": [3]})
    assert result.score is None
    assert result.skipped_small == 2


def test_groups_of_one_can_be_counted_when_asked():
    # With min_group_size=1 a singleton enters N with sigma 0: 2 groups / (0 + 1) = 2.
    result = alignment_score({"a": [7], "b": [4, 6]}, min_group_size=1)
    assert result.score == 2.0


# ------------------------------------------------------------------ agreement

JUDGE = [1, 2, 3, 4, 5]
HUMAN = [2, 4, 5, 4, 5]


def test_mae_pearson_by_hand():
    assert metrics.mean_absolute_error(JUDGE, HUMAN) == 1.0  # (1 + 2 + 2 + 0 + 0) / 5
    # deviations (-2,-1,0,1,2) and (-2,0,1,0,1): 6 / sqrt(10 * 6)
    assert metrics.pearson(JUDGE, HUMAN) == pytest.approx(6 / math.sqrt(60))


def test_spearman_uses_average_ranks_for_ties():
    # HUMAN ranks: 2 -> 1; the two 4s share 2.5; the two 5s share 4.5.
    assert metrics.average_ranks(HUMAN) == [1, 2.5, 4.5, 2.5, 4.5]
    # rank deviations (-2,-1,0,1,2) and (-2,-.5,1.5,-.5,1.5): 7 / sqrt(10 * 9)
    assert metrics.spearman(JUDGE, HUMAN) == pytest.approx(7 / math.sqrt(90))


def test_kendall_tau_b_with_ties_by_hand():
    # Of the 10 pairs: 7 concordant, 1 discordant (items 3,4), 2 tied in HUMAN only.
    # tau_b = (7 - 1) / sqrt((10 - 0) * (10 - 2))
    assert metrics.kendall_tau_b(JUDGE, HUMAN) == pytest.approx(6 / math.sqrt(80))


def test_kendall_tau_b_tied_on_both_sides_by_hand():
    a = [1, 1, 2, 2]
    b = [1, 1, 1, 2]
    # pairs: (0,1) tied both; (0,2) a< b= ; (0,3) C; (1,2) a< b=; (1,3) C; (2,3) a= b<.
    # C = 2, D = 0; n1 (ties in a) = 2, n2 (ties in b) = 3; tau_b = 2 / sqrt((6-2)(6-3))
    assert metrics.kendall_tau_b(a, b) == pytest.approx(2 / math.sqrt(12))


def _brute_force_tau_b(a, b):
    concordant = discordant = ties_a = ties_b = 0
    for i, j in itertools.combinations(range(len(a)), 2):
        da, db = a[i] - a[j], b[i] - b[j]
        if da == 0:
            ties_a += 1
        if db == 0:
            ties_b += 1
        if da * db > 0:
            concordant += 1
        elif da * db < 0:
            discordant += 1
    n0 = len(a) * (len(a) - 1) / 2
    return (concordant - discordant) / math.sqrt((n0 - ties_a) * (n0 - ties_b))


@pytest.mark.parametrize("seed", range(5))
def test_fast_kendall_matches_the_pairwise_definition(seed):
    rng = random.Random(seed)
    a = [rng.randint(1, 10) for _ in range(300)]  # many ties, like judge scores
    b = [min(10, max(1, x + rng.randint(-3, 3))) for x in a]
    assert metrics.kendall_tau_b(a, b) == pytest.approx(_brute_force_tau_b(a, b), abs=1e-12)


def test_constant_scores_have_no_correlation():
    assert metrics.pearson([3, 3, 3], [1, 2, 3]) is None
    assert metrics.spearman([3, 3, 3], [1, 2, 3]) is None
    assert metrics.kendall_tau_b([3, 3, 3], [1, 2, 3]) is None


def test_range_accuracies_by_hand():
    # fuzzy ranges {1-2},{3-5},{6-8},{9-10}: JUDGE -> 0,0,1,1,1; HUMAN -> 0,1,1,1,1 -> 4 of 5 agree
    assert metrics.range_accuracy(JUDGE, HUMAN, metrics.FUZZY_RANGES) == 0.8
    # strict {1},{2},{3},{4-5},{6},{7-8},{9-10}: JUDGE -> 0,1,2,3,3; HUMAN -> 1,3,3,3,3 -> 2 of 5
    assert metrics.range_accuracy(JUDGE, HUMAN, metrics.STRICT_RANGES) == 0.4
    assert metrics.range_accuracy([8, 9], [9, 10], metrics.FUZZY_RANGES) == 0.5  # 8 | 9 differ; 9, 10 agree
    assert metrics.range_accuracy([7, 9], [8, 10], metrics.STRICT_RANGES) == 1.0


def test_agreement_bundles_all_six_numbers():
    result = metrics.agreement(JUDGE, HUMAN)
    assert set(result) == {"n", "mae", "pearson", "spearman", "kendall_tau_b", "fuzzy_accuracy", "strict_accuracy"}
    assert result["n"] == 5


def test_unequal_lengths_are_refused():
    with pytest.raises(ValueError, match="differ in length"):
        metrics.pearson([1, 2], [1])


# ------------------------------------------------------------------ pairwise votes


@pytest.mark.parametrize(
    "vote,order,side",
    [
        ("Answer1", 1, ANCHOR),
        ("Answer2", 1, MODEL),  # order 1: anchor shown first
        ("Answer1", 2, MODEL),
        ("Answer2", 2, ANCHOR),  # order 2: model shown first
        ("unable to decide: situation one", 1, UNABLE_ONE_SIDE),
        ("unable to decide: situation two", 2, UNABLE_TWO_SIDE),
    ],
)
def test_vote_side(vote, order, side):
    assert vote_side(vote, order) == side


@pytest.mark.parametrize(
    "first,second,combined",
    [
        (MODEL, MODEL, MODEL),
        (ANCHOR, ANCHOR, ANCHOR),
        (MODEL, UNABLE_ONE_SIDE, MODEL),  # a win and "unable" -> the win
        (UNABLE_TWO_SIDE, ANCHOR, ANCHOR),
        (MODEL, ANCHOR, SPLIT),  # each wins one order -> tie
        (UNABLE_ONE_SIDE, UNABLE_TWO_SIDE, UNABLE),
        (UNABLE_TWO_SIDE, UNABLE_TWO_SIDE, UNABLE_TWO_SIDE),
    ],
)
def test_two_order_combination(first, second, combined):
    assert combine_sides(first, second) == combined
    assert combine_sides(second, first) == combined


def test_every_non_win_non_loss_is_a_tie():
    assert [outcome_result(o) for o in (MODEL, ANCHOR, SPLIT, UNABLE, UNABLE_ONE_SIDE)] == ["win", "lose", "tie", "tie", "tie"]
    assert [battle_score(o) for o in (MODEL, ANCHOR, SPLIT)] == [1.0, 0.0, 0.5]


def test_win_tie_lose_and_win_rate_count_failures_in_the_denominator():
    table = metrics.win_tie_lose([("L1", "win"), ("L1", "tie"), ("L1", "lose"), ("L1", "win"), ("L2", "failed")])
    assert table["L1"] == {"win": 2, "tie": 1, "lose": 1, "failed": 0, "total": 4, "win_rate": 0.5}
    assert table["L2"]["win_rate"] == 0.0 and table["L2"]["total"] == 1


# ------------------------------------------------------------------ Elo and Bradley-Terry


def test_elo_two_battles_by_hand():
    # Battle 1: expected 0.5, A wins: A += 4 * 0.5 -> 1002, B -> 998.
    # Battle 2: B wins: E_A = 1 / (1 + 10^((998 - 1002) / 400)) = 0.5057562..., A -= 4 * E_A.
    ratings = elo_ratings([("A", "B", 1), ("A", "B", 0)])
    assert ratings["A"] == pytest.approx(999.9769751663554, abs=1e-9)
    assert ratings["B"] == pytest.approx(1000.0230248336446, abs=1e-9)


def test_elo_uses_the_issue_constants():
    assert EloSettings() == EloSettings(k=4, scale=400, base=10, initial=1000)
    assert elo_ratings([("A", "B", 0.5)]) == {"A": 1000, "B": 1000}


def test_bootstrap_elo_is_reproducible_and_median_based():
    rng = random.Random(1)
    battles = [("m", "anchor", rng.choice([1, 1, 1, 0, 0.5])) for _ in range(200)]
    first = bootstrap_elo(battles, rounds=200, seed=7)
    assert first == bootstrap_elo(battles, rounds=200, seed=7)
    assert first != bootstrap_elo(battles, rounds=200, seed=8)
    low, high = first["m"]["ci95"]
    assert low <= first["m"]["median"] <= high
    assert first["m"]["median"] > 1000 > first["anchor"]["median"]  # m wins most battles


def test_bootstrap_of_all_ties_stays_at_initial_rating():
    result = bootstrap_elo([("a", "b", 0.5)] * 20, rounds=50, seed=0)
    assert result["a"]["median"] == 1000 and result["b"]["median"] == 1000


def test_bradley_terry_star_by_hand():
    # A vs X: 3 wins 1 loss -> pA/pX = 3; B vs X: 1 win 3 losses -> pB/pX = 1/3.
    # Geometric mean of (3, 1, 1/3) is 1, so pX = 1 and A = 1000 + 400 log10 3.
    battles = [("A", "X", s) for s in (1, 1, 1, 0)] + [("B", "X", s) for s in (1, 0, 0, 0)]
    ratings = bradley_terry(battles)
    assert ratings["X"] == pytest.approx(1000, abs=1e-6)
    assert ratings["A"] == pytest.approx(1000 + 400 * math.log10(3), abs=1e-6)
    assert ratings["B"] == pytest.approx(1000 - 400 * math.log10(3), abs=1e-6)


def test_bradley_terry_ties_count_half():
    # 1 win + 1 tie for A against X: A has 1.5 wins, X 0.5 -> ratio 3, symmetric around 1000.
    ratings = bradley_terry([("A", "X", 1), ("A", "X", 0.5)])
    assert ratings["A"] - ratings["X"] == pytest.approx(400 * math.log10(3), abs=1e-6)


def test_bradley_terry_unbeaten_model_is_infinite():
    battles = [("A", "X", 1), ("A", "X", 0), ("C", "X", 1), ("C", "X", 1)]
    ratings = bradley_terry(battles)
    assert ratings["C"] == math.inf
    assert ratings["A"] == pytest.approx(ratings["X"])  # 1-1 once C's battles are set aside


def test_bradley_terry_agrees_with_elo_ranking():
    rng = random.Random(3)
    strength = {"a": 0.8, "b": 0.6, "c": 0.4, "d": 0.25}
    battles = [(m, "anchor", 1 if rng.random() < p else 0) for m, p in strength.items() for _ in range(300)]
    bt = bradley_terry(battles)
    elo = {m: v["median"] for m, v in bootstrap_elo(battles, rounds=100, seed=0).items()}
    assert sorted(bt, key=bt.get) == sorted(elo, key=elo.get)


# ---- human raters (judge validation) -------------------------------------------------------------


def test_krippendorff_alpha_nominal_by_hand():
    # n = 6 pairable values; D_o = 2/6 (unit 2's two ordered disagreeing pairs); D_e = (36 - 18) / 30.
    units = {1: ["a", "a"], 2: ["a", "b"], 3: ["b", "b"], 4: ["b"]}  # a unit of one value is not pairable
    assert metrics.krippendorff_alpha(units, "nominal") == pytest.approx(4 / 9)


def test_krippendorff_alpha_interval_by_hand():
    # D_o = (2 + 0 + 2) / 6; D_e = (2*6*64 - 2*18^2) / 30 = 4; alpha = 1 - (2/3) / 4.
    units = {1: [1, 2], 2: [3, 3], 3: [5, 4]}
    assert metrics.krippendorff_alpha(units, "interval") == pytest.approx(5 / 6)
    assert metrics.krippendorff_alpha({1: [1, 1], 2: [3, 3]}, "interval") == 1.0  # perfect agreement
    # Three raters on one unit: weights 1/(m-1) = 1/2. Values 1,2,3 + 5,5: D_o = (1+4+1)*2/2/5, D_e by the sums.
    three = metrics.krippendorff_alpha({1: [1, 2, 3], 2: [5, 5]}, "interval")
    values = [1, 2, 3, 5, 5]
    d_e = (2 * 5 * sum(v * v for v in values) - 2 * sum(values) ** 2) / 20
    assert three == pytest.approx(1 - (6 / 5) / d_e)


def test_krippendorff_alpha_is_undefined_without_variation_or_pairs():
    assert metrics.krippendorff_alpha({1: ["a", "a"], 2: ["a", "a"]}) is None
    assert metrics.krippendorff_alpha({1: ["a"], 2: ["b"]}) is None
    with pytest.raises(ValueError, match="unknown level"):
        metrics.krippendorff_alpha({1: [1, 2]}, "ordinal")


def test_rater_pair_matching_counts_only_items_both_rated():
    table = metrics.rater_pair_matching({"r2": {1: "a", 2: "b", 3: "a"}, "r1": {1: "a", 2: "a", 4: "b"}, "r3": {9: "a"}})
    assert table[("r1", "r2")] == {"n": 2, "agreement": 0.5}
    assert table[("r1", "r3")] == {"n": 0, "agreement": None} and set(table) == {("r1", "r2"), ("r1", "r3"), ("r2", "r3")}


@pytest.mark.parametrize(
    "votes, expected",
    [
        (["model", "anchor"], "unable"),  # equal votes for the two sides
        (["model", "anchor", "unable_one", "unable_two"], "unable"),
        (["model", "model", "unable_one", "unable_two"], "model"),  # as many unable as the leader: not more
        (["model", "unable_one", "unable_two"], "unable"),  # more unable than either side
        (["model", "model", "anchor", "unable_one"], "model"),
        (["anchor", "anchor", "model"], "anchor"),
        (["unable_one", "unable_one"], "unable"),
        ([], None),
    ],
)
def test_mllm_bench_majority_with_ties_and_unable(votes, expected):
    assert metrics.mllm_majority(votes) == expected


def test_vote_agreement_of_individual_raters_and_their_majority_by_hand():
    judge = {1: "model", 2: "anchor", 3: "unable_one"}
    raters = {
        "A": {1: "model", 2: "model", 3: "unable_two"},  # both unable count as the same outcome: 2/3
        "B": {1: "model", 2: "anchor", 3: "anchor"},  # 2/3
        "C": {1: "anchor", 2: "anchor", 3: "unable_one", 4: "model"},  # item 4 has no judge vote: 2/3
    }
    result = metrics.vote_agreement(judge, raters)
    assert result["individual"] == pytest.approx(2 / 3)
    assert result["per_rater"]["C"] == {"n": 3, "agreement": pytest.approx(2 / 3)}
    # Majorities: 1 -> model (2:1), 2 -> anchor (1:2), 3 -> unable (2 unable > 1 anchor): all match.
    assert result["majority"] == 1.0 and result["items"] == 3
    flipped = metrics.vote_agreement({1: "anchor", 2: "anchor", 3: "model"}, raters)
    assert flipped["majority"] == pytest.approx(1 / 3)


def test_matching_share_is_the_extractors_accuracy():
    assert metrics.matching_share(["A", "B", None, "C"], ["A", "C", None, "C"]) == 0.75
    assert metrics.matching_share([], []) is None


@pytest.mark.parametrize(
    ("values", "expected"),
    [(["B", "B", "A"], "B"), (["B", "A"], None), (["none", "none", "C", "C"], None), (["C"], "C"), ([], None)],
)
def test_plurality_reading_and_ties(values, expected):
    assert metrics.plurality(values) == expected


def test_reader_accuracy_against_the_raters_plurality_by_hand():
    # Items 1-4 read by the reader; raters R1-R3. Item 1: plurality B (reader B, match); item 2:
    # plurality none (reader A, miss); item 3: tie A/C (left out); item 4: plurality D (reader D).
    # Item 5 was not read by this reader: ignored.
    readings = {1: "B", 2: "A", 3: "A", 4: "D"}
    raters = {
        "R1": {1: "B", 2: "none", 3: "A", 4: "D", 5: "B"},
        "R2": {1: "B", 2: "none", 3: "C", 4: "D"},
        "R3": {1: "C", 2: "A", 4: "A"},
    }
    got = metrics.reader_accuracy(readings, raters)
    assert got["items"] == 3 and got["ties"] == 1
    assert got["accuracy"] == pytest.approx(2 / 3)
    # R1 matches on items 1, 3, 4 of 4 (3/4); R2 on 1, 4 of 4 (2/4); R3 on 2 of 3 (1/3).
    assert got["individual"] == pytest.approx((3 / 4 + 2 / 4 + 1 / 3) / 3)
    assert metrics.reader_accuracy({}, raters) == {"items": 0, "ties": 0, "accuracy": None, "individual": None}
