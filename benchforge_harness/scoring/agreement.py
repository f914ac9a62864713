"""Judge-human agreement as a scoring mode: how closely judge scores follow human scores for the
same answers (benchforge_harness/README.md, `agreement`). No model is asked: the scores come in."""

from __future__ import annotations

from collections.abc import Sequence

from benchforge_harness.io import InputError
from benchforge_harness.metrics import RANGE_RULE, agreement, undefined_correlations
from benchforge_harness.scoring.modes import Scores

Score = tuple  # (model or None, item id, score)


def pair_scores(judge: list, human: list, judge_file: str = "judge", human_file: str = "human") -> tuple[list, int, int]:
    """[(model or None, id, judge score, human score)], unpaired judge rows, unpaired human rows.

    A score rates one model's answer to one item: rows pair by (item, model). A file names the
    model in every row or in none; one that names it in some rows only is refused (which answer
    its other rows rate is unknown, and pairing them by id alone could meet another model's score).
    When both files name models, rows pair by (model, id); when one side names none, every row of
    the other pairs with the score of its id, which must then name one row on each side: a side
    with several models' scores for one id, facing a side that does not say which model its score
    rates, is ambiguous and refused."""
    for rows, name in ((judge, judge_file), (human, human_file)):
        named = next((i for m, i, _ in rows if m is not None), None)
        unnamed = next((i for m, i, _ in rows if m is None), None)
        if named is not None and unnamed is not None:
            raise InputError(
                f"{name} names the model in some rows (e.g. id {named!r}) but not in others (e.g. id {unnamed!r}): "
                "a score rates one model's answer, so which answer those rows rate is unknown. Add a 'model' "
                "field to every row, or to none"
            )
    judge_named = bool(judge) and judge[0][0] is not None
    human_named = bool(human) and human[0][0] is not None
    if judge_named and human_named:
        judge_by = {(m, i): v for m, i, v in judge}
        human_by = {(m, i): v for m, i, v in human}
        pairs = [(m, i, v, human_by[(m, i)]) for (m, i), v in judge_by.items() if (m, i) in human_by]
        return pairs, len(judge) - len(pairs), len(human) - len(pairs)
    for rows, name, other in ((judge, judge_file, human_file), (human, human_file, judge_file)):
        by_id: dict[str, list] = {}
        for model, item_id, _ in rows:
            by_id.setdefault(item_id, []).append(model)
        shared = {i: ms for i, ms in by_id.items() if len(ms) > 1}
        if shared:
            example, models = next(iter(shared.items()))
            raise InputError(
                f"{name} has {len(shared)} id(s) scored for several models (e.g. {example!r}: "
                f"{', '.join(str(m) for m in models)}), but {other} does not name the model in its rows, so which "
                f"answer each of its scores rates is ambiguous: add a 'model' field to every row of {other}"
            )
    human_by_id = {i: (m, v) for m, i, v in human}
    pairs = [(m or human_by_id[i][0], i, v, human_by_id[i][1]) for m, i, v in judge if i in human_by_id]
    return pairs, len(judge) - len(pairs), len(human) - len(pairs)


def judge_agreement(
    client=None,
    items=(),
    *,
    sink=None,
    judge_scores: Sequence[Score],
    human_scores: Sequence[Score],
    judge_file: str = "judge",
    human_file: str = "human",
) -> Scores:
    """MAE, Pearson, Spearman, Kendall tau-b and the fuzzy and strict range accuracies, overall and
    per model, over the judge and human scores that pair up (pair_scores). client, items and sink
    are the modes' common signature; nothing is asked, so they go unused."""
    paired, judge_only, human_only = pair_scores(list(judge_scores), list(human_scores), judge_file, human_file)
    if not paired:
        raise InputError(f"no row of {judge_file} pairs with a row of {human_file} (check ids and models)")
    results = {
        "command": "agreement",
        "judge_file": str(judge_file),
        "human_file": str(human_file),
        "paired": len(paired),
        "judge_only": judge_only,
        "human_only": human_only,
        "overall": agreement([p[2] for p in paired], [p[3] for p in paired]),
        "by_model": {},
        "undefined": {},
        "range_rule": RANGE_RULE,
    }
    scopes = {"all": paired}
    for model in sorted({p[0] for p in paired if p[0] is not None}):
        scopes[model] = [p for p in paired if p[0] == model]
        results["by_model"][model] = agreement([p[2] for p in scopes[model]], [p[3] for p in scopes[model]])
    for scope, rows in scopes.items():
        why = undefined_correlations([p[2] for p in rows], [p[3] for p in rows])
        if why:
            results["undefined"][scope] = why
    rows = {f"{m or ''}\t{i}": {"model": m, "id": i, "judge": j, "human": h} for m, i, j, h in paired}
    return Scores("agreement", results, rows)
