"""The quality filters: when a filter flags an item, when its verdict is settled, and asking
models in turn until it is (METHODS section 6).

  * TEXT_ONLY: asked without images, an item is flagged when more than `threshold` of the
    models solve it (default 0.5: more than half);
  * JUDGED_TEXT_ONLY: the same line, for open items graded by a judge;
  * ALL_FAIL: asked with images, an item is flagged when at most `threshold` of the models solve
    it (default 0: none does).

Models are asked one after the other. With stop_when_decided, a model is not asked about an item
whose flag can no longer change whatever the models not yet counted do (not asked, or whose call
failed: an outage never flags an item, nor clears it).

The line is compared in exact arithmetic: a threshold is the decimal a person wrote (0.58 is 29/50,
not the binary float just under it), so 29 solvers of 50 are not "more than 0.58" of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal
from fractions import Fraction

from benchforge_harness.io import InputError

TEXT_ONLY, ALL_FAIL, JUDGED_TEXT_ONLY = "text_only", "all_fail", "judged_text_only"
DEFAULT_THRESHOLD = {TEXT_ONLY: 0.5, JUDGED_TEXT_ONLY: 0.5, ALL_FAIL: 0.0}
FILTERS = tuple(DEFAULT_THRESHOLD)
TITLES = {
    TEXT_ONLY: "Text-only (answerable without the image)",
    ALL_FAIL: "All-fail (no model solves it with the image)",
    JUDGED_TEXT_ONLY: "Judged text-only (open items, scored by a judge)",
}
SOLVED, FAILED, CALL_ERROR, SKIPPED = "solved", "failed", "error", "skipped"  # an item's outcome for one model


def check_filter(filter: str | None, threshold: float | None = None) -> float | None:
    """The threshold the filter uses (its default when None); refuses an unknown filter or a
    threshold that is not a share of the models."""
    if filter is None:
        return None
    if filter not in FILTERS:
        raise InputError(f"unknown QC filter {filter!r}: expected {', '.join(FILTERS)}")
    try:
        threshold = DEFAULT_THRESHOLD[filter] if threshold is None else float(threshold)
    except (TypeError, ValueError):
        raise InputError(f"the threshold is a share of the models, from 0 up to (not including) 1, not {threshold!r}") from None
    if not 0 <= threshold < 1:
        raise InputError(f"the threshold is a share of the models, from 0 up to (not including) 1, not {threshold}")
    return threshold


def exact_share(value: float | str | Decimal | Fraction | int) -> Fraction:
    """A share as the exact number it was written as: a float by its shortest decimal form (the
    one `repr` prints, which reads back as the same float: 0.58 -> 29/50), text, a Decimal or a
    Fraction as they are."""
    if isinstance(value, float):
        return Fraction(repr(value))
    return Fraction(value)


def _line(filter: str, models: int, threshold) -> Fraction:
    """threshold x models, exactly: the number of solvers the filter compares with."""
    check_filter(filter, threshold)
    return exact_share(DEFAULT_THRESHOLD[filter] if threshold is None else threshold) * models


def filter_flag(filter: str, solved: int, models: int, threshold: float | None = None) -> bool:
    """Whether `filter` flags an item `solved` of `models` models solved."""
    line = _line(filter, models, threshold)
    return solved <= line if filter == ALL_FAIL else solved > line


def verdict_decided(filter: str, solved: int, failed: int, models: int, threshold: float | None = None) -> bool:
    """Whether the item's flag is settled whatever the models not yet counted do: the solvers
    already pass the line, or cannot reach it any more. Every filter has the same line; only which
    side of it is flagged differs."""
    line = _line(filter, models, threshold)
    return solved > line or solved + (models - solved - failed) <= line


def ask_in_turn(
    models: Sequence[str],
    ids: Sequence[str],
    ask: Callable[[str, list[str]], dict[str, str]],
    *,
    filter: str | None,
    threshold: float | None,
    stop_when_decided: bool,
) -> dict[str, dict[str, str]]:
    """{model: {item id: outcome}}: ask(model, ids) for each model in turn, leaving out (SKIPPED)
    the items whose verdict the models before it settled, when stop_when_decided."""
    outcomes: dict[str, dict[str, str]] = {}
    for index, model in enumerate(models):
        settled = set()
        if filter and stop_when_decided:
            for item_id in ids:
                before = [outcomes[m][item_id] for m in models[:index]]
                if verdict_decided(filter, before.count(SOLVED), before.count(FAILED), len(models), threshold):
                    settled.add(item_id)
        asked = ask(model, [i for i in ids if i not in settled]) if len(settled) < len(ids) else {}
        outcomes[model] = {i: SKIPPED if i in settled else asked[i] for i in ids}
    return outcomes


def stop_savings(pairs: Iterable[tuple[int, int | None, int]]) -> dict:
    """Where a run's calls to the models under test went, the counts every QC report shows, from one
    (calls the pair needs when nothing stops, calls made or None when the QC stop left the pair out,
    the fewest calls the pair makes once asked) per (model, item) pair:

      asked               calls made
      every_call          calls of every pair when nothing stops (asked + after_a_wrong_pass +
                          the left-out pairs' calls)
      after_a_wrong_pass  calls not made on the pairs asked: CircularEval stops at a model's first
                          wrong (or failed) pass on an item
      qc_stop_pairs       (model, item) pairs the QC stop left out (their verdict was settled)
      qc_stop_saved_at_least, qc_stop_saved_at_most
                          the calls those pairs would have made in the same run without the QC
                          stop: a left-out model's answers are unknown, so from the fewest (its
                          first pass wrong) to all of them; equal when every pass is asked
    """
    counts = dict.fromkeys(
        ("asked", "every_call", "after_a_wrong_pass", "qc_stop_pairs", "qc_stop_saved_at_least", "qc_stop_saved_at_most"), 0
    )
    for needed, made, least in pairs:
        counts["every_call"] += needed
        if made is None:
            counts["qc_stop_pairs"] += 1
            counts["qc_stop_saved_at_least"] += least
            counts["qc_stop_saved_at_most"] += needed
        else:
            counts["asked"] += made
            counts["after_a_wrong_pass"] += needed - made
    return counts


def item_flags(
    filter: str, threshold: float | None, models: Sequence[str], ids: Sequence[str], outcomes: dict[str, dict[str, str]]
) -> dict[str, dict]:
    """Per item: whether `filter` flags it and whether that is settled, with who solved it, who
    failed, whose calls failed and who was not asked."""
    flags = {}
    for item_id in ids:
        by = {
            outcome: [m for m in models if outcomes[m].get(item_id) == outcome]
            for outcome in (SOLVED, FAILED, CALL_ERROR, SKIPPED)
        }
        solved, failed = len(by[SOLVED]), len(by[FAILED])
        decided = verdict_decided(filter, solved, failed, len(models), threshold)
        flags[item_id] = {
            "flagged": decided and filter_flag(filter, solved, len(models), threshold),
            "decided": decided,
            "solved_by": by[SOLVED],
            "failed_by": by[FAILED],
            "errors": by[CALL_ERROR],
            "not_asked": by[SKIPPED],
        }
    return flags
