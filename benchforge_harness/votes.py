"""MLLM-Bench pairwise votes: from positional votes to one outcome per question.

Each question is judged twice against the anchor model:
  order 1: the anchor's answer is Answer1, the benchmarked model's is Answer2;
  order 2: the benchmarked model's answer is Answer1, the anchor's is Answer2.
A positional vote becomes a side (MODEL, ANCHOR, UNABLE_ONE, UNABLE_TWO); the two sides are then
combined as the published code does, and the combined outcome is tallied as win/tie/lose.
"""

from __future__ import annotations

from benchforge_harness.metrics import LOSE, TIE, WIN
from benchforge_harness.parsing import ANSWER1, ANSWER2, UNABLE_ONE, UNABLE_TWO

MODEL, ANCHOR = "model", "anchor"
UNABLE_ONE_SIDE, UNABLE_TWO_SIDE, UNABLE = "unable_one", "unable_two", "unable"
SPLIT = "split"  # each side won one order
ORDERS = (1, 2)


def vote_side(vote: str, order: int) -> str:
    """Which side a positional vote favours, given the order the answers were shown in."""
    if vote == UNABLE_ONE:
        return UNABLE_ONE_SIDE
    if vote == UNABLE_TWO:
        return UNABLE_TWO_SIDE
    if vote not in (ANSWER1, ANSWER2) or order not in ORDERS:
        raise ValueError(f"unknown vote {vote!r} or order {order!r}")
    model_position = ANSWER2 if order == 1 else ANSWER1
    return MODEL if vote == model_position else ANCHOR


def combine_sides(first: str, second: str) -> str:
    """Combine the sides of the two orders.

    same side twice -> it; a win and an "unable" -> the win; one win each -> SPLIT;
    two different "unable" -> UNABLE.
    """
    if first == second:
        return first
    wins = {first, second} & {MODEL, ANCHOR}
    if len(wins) == 2:
        return SPLIT
    if len(wins) == 1:
        return wins.pop()
    return UNABLE


def combine_votes(order1_vote: str, order2_vote: str) -> str:
    """One question's outcome from the judge's positional votes in order 1 (anchor shown first)
    and order 2 (model shown first): MODEL, ANCHOR, SPLIT, or an "unable" side."""
    return combine_sides(vote_side(order1_vote, 1), vote_side(order2_vote, 2))


def outcome_result(outcome: str) -> str:
    """win/tie/lose from the model's point of view; every non-win, non-loss outcome is a tie."""
    if outcome == MODEL:
        return WIN
    if outcome == ANCHOR:
        return LOSE
    return TIE


def battle_score(outcome: str) -> float:
    """The model's score in an Elo battle against the anchor."""
    return {WIN: 1.0, LOSE: 0.0, TIE: 0.5}[outcome_result(outcome)]
