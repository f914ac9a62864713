"""Reads of item analysis: the scores an analysis takes, its results matrix (for the job), the page's
rows (compact ItemStat rows, sorted and filtered in the database), the flags in words, and what
the release build reads (items left out, the anchor split for the next bundle)."""

import json

import numpy as np
from django.db import connection
from django.db.models import F
from django.http import Http404
from django.utils.translation import gettext as _

from benchforge_harness import parse_item, scoring
from benchforge_harness.anchors import SPLITS_FOLDER, Split
from exports import selectors as exports
from exports.models import Release

from .models import Analysis, Flag, ItemStat, LeftOut, ScoreResults

SORTS = {
    "order": "order",
    "difficulty": "difficulty",
    "share_right": "share_right",
    "discrimination": "discrimination",
    "irt_a": "irt_a",
    "irt_b": "irt_b",
    "disagreement": "disagreement",
}


def latest_scores(release, method: str) -> list:
    """The release's finished scores of `method`, the newest per model label, oldest first (the
    matrix's row order)."""
    newest = {}
    for score in exports.scores_of(release).filter(method=method, status="done").order_by("created_at", "pk"):
        newest[score.label] = score
    return sorted(newest.values(), key=lambda s: (s.created_at, s.pk))


def models_scored(release, method: str) -> int:
    """How many models have a finished score of `method` (one query; no score's answers are read)."""
    return exports.scores_of(release).filter(method=method, status="done").order_by().values("label").distinct().count()


def results_matrix(release, scores) -> dict:
    """{"keys", "values" (models x items, NaN: no result), "labels" [{key: label}] per model, "items"
    [{"item_id", "order", "task", "category", "question"}]}: the items some model has a result on,
    in release order."""
    stored = dict(ScoreResults.objects.filter(score__in=scores).values_list("score_id", "results"))
    per_model = [stored.get(s.pk, {}) for s in scores]
    scored = set().union(*[set(r) for r in per_model]) if per_model else set()
    rows = release.items.order_by("order").values_list("key", "item_id", "order", "task", "row")
    keys, items = [], []
    for key, item_id, order, task, row in rows.iterator(2000):
        if key in scored:
            keys.append(key)
            items.append(
                {
                    "item_id": item_id,
                    "order": order,
                    "task": task,
                    "category": row.get("category") or "",
                    "question": row.get("question") or "",
                    "expected": _expected(row),
                }
            )
    column = {key: i for i, key in enumerate(keys)}
    values = np.full((len(scores), len(keys)), np.nan)
    labels = []
    for m, results in enumerate(per_model):
        for key, (value, _label) in results.items():
            if key in column:
                values[m, column[key]] = value
        labels.append({key: label for key, (_value, label) in results.items()})
    return {"keys": keys, "values": values, "labels": labels, "items": items}


def _expected(row: dict) -> str:
    answer = row.get("answer")
    if answer:
        return f"{answer}. {(row.get('choices') or {}).get(answer, '')}".strip()
    return row.get("reference_answer") or ""


# ---- the page -----------------------------------------------------------------------------------


def analyses_of(release) -> list[Analysis]:
    return list(Analysis.objects.filter(release=release).select_related("job").order_by("method"))


def get_analysis(release, method: str) -> Analysis:
    found = Analysis.objects.filter(release=release, method=method).select_related("job", "release__benchmark").first()
    if found is None:
        raise Http404(_("No item analysis of this release's %(method)s scores yet.") % {"method": method})
    return found


def item_rows(analysis: Analysis, *, task: str = "", flag: str = "", sort: str = "order", descending: bool = False):
    """The analysis's items for the page: sorted on a figure (missing figures last), filtered by task and flag."""
    rows = ItemStat.objects.filter(analysis=analysis)
    if task:
        rows = rows.filter(task=task)
    if flag == "any":
        rows = rows.filter(flagged=True)
    elif flag in Flag.values:
        rows = (
            rows.filter(flagged=True, flags__contains=[flag]) if _json_contains() else rows.filter(flags__icontains=f'"{flag}"')
        )
    field = F(SORTS.get(sort, "order"))
    return rows.order_by(field.desc(nulls_last=True) if descending else field.asc(nulls_last=True), "order")


def _json_contains() -> bool:
    """JSON containment (flags__contains) is a Postgres lookup; SQLite filters the text instead."""
    return connection.vendor == "postgresql"


def tasks_of(analysis: Analysis) -> list[str]:
    return list(ItemStat.objects.filter(analysis=analysis).order_by("task").values_list("task", flat=True).distinct())


def left_out_keys(analysis: Analysis, item_ids) -> dict[int, str]:
    """{item id: reason} of these items that are left out of the next release."""
    return dict(
        LeftOut.objects.filter(benchmark_id=analysis.release.benchmark_id, item_id__in=list(item_ids)).values_list(
            "item_id", "reason"
        )
    )


def percent(value) -> str:
    return "—" if value is None else f"{100 * value:.0f}%"


def reasons(flags, stat: dict) -> list[str]:
    """Each flag of an item as a sentence its owner (and a reviewer) can act on, in the reader's language."""
    n = stat.get("n_models") or 0
    said = []
    for code in flags:
        if code == Flag.SATURATED:
            said.append(
                _(
                    "Saturated: every model gets it right (%(n)s of %(n)s), so it no longer separates models. Make it harder or retire it."
                )
                % {"n": n}
            )
        elif code == Flag.UNANSWERABLE:
            said.append(
                _(
                    "Unanswerable: no model gets it right (0 of %(n)s). Check its answer key or reference answer, whether a "
                    "judge can grade it, and whether the image is ambiguous."
                )
                % {"n": n}
            )
        elif code == Flag.NEGATIVE:
            said.append(
                _(
                    "Negative discrimination (%(r)s over %(n)s models): strong models fail it while weak ones pass. Check its "
                    "answer key and wording."
                )
                % {"r": _signed(stat.get("discrimination")), "n": n}
            )
        elif code == Flag.DISAGREEMENT:
            said.append(
                _(
                    "People disagree with the judge on %(share)s of %(ratings)s ratings. Check the reference answer and the "
                    "criteria the judge grades with."
                )
                % {"share": percent(stat.get("disagreement")), "ratings": stat.get("ratings") or 0}
            )
    return said


def reasons_text(flags, stat: dict) -> str:
    return " ".join(reasons(flags, stat))


def _signed(value) -> str:
    return "—" if value is None else f"{value:+.2f}"


# ---- what the release build reads ---------------------------------------------------------------


def left_out_for_build(benchmark) -> dict[int, dict]:
    """{item id: {"key", "reason", "release"}} of the benchmark's items left out of new releases."""
    rows = LeftOut.objects.filter(benchmark=benchmark).values_list("item_id", "key", "reason", "release__version")
    return {item_id: {"key": key, "reason": reason, "release": version} for item_id, key, reason, version in rows}


def split_for_bundle(release: Release) -> list[tuple[str, str, list[str]]]:
    """The anchor splits a new release's bundle carries: those chosen on the release it follows
    (its source), kept to the items it holds unchanged; items new or changed since get their task's
    median parameters (not calibrated yet: the card says how many). [(path, text, card lines)]."""
    source = release.source
    if source is None:
        return []
    found = []
    analyses = Analysis.objects.filter(release=source).exclude(split={}).order_by("method")
    if not analyses:
        return []
    before = dict(source.items.values_list("key", "row"))
    now = dict(release.items.values_list("key", "row"))
    for analysis in analyses:
        found.append(_carried_split(analysis, source, release, before, now))
    return [f for f in found if f is not None]


def bundle_extras(release: Release, variant: str) -> list[tuple[str, str, list[str]]]:
    """What exports writes into a bundle (both variants: the split names items and figures, no private part)."""
    return split_for_bundle(release)


def _carried_split(analysis: Analysis, source, release, before: dict, now: dict):
    split = Split.from_dict(analysis.split)
    same = {key for key, row in now.items() if key in before and _scoring_part(before[key]) == _scoring_part(row)}
    anchors = [key for key in split.anchors if key in same]
    if not anchors:
        return None
    items = {key: split.items[key] for key in split.items if key in same}
    by_task: dict[str, list] = {}
    for key in items:
        by_task.setdefault(now[key].get("task") or "", []).append(items[key])
    every = list(items.values())
    guessed = 0
    for key, row in now.items():
        if key in items or key not in _scored_by(analysis, row):
            continue
        pool = by_task.get(row.get("task") or "") or every
        items[key] = (_median([a for a, _ in pool]), _median([b for _, b in pool]))
        guessed += 1
    about = dict(split.about)
    about.update(
        {
            "calibrated_on": about.get("release"),
            "carried_into": f"{release.benchmark.slug} {release.version}",
            "not_calibrated": guessed,
        }
    )
    carried = Split(split.name, split.mode, split.scale, anchors, items, split.interval_scale, split.theta_prior, about)
    text = json.dumps(carried.to_dict(), indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    return split_path(analysis.method), text, card_lines(carried, analysis)


def _scored_by(analysis: Analysis, row: dict):
    """The item ids (a set with this row's id, or empty) the analysis's scoring mode would score."""
    mode = scoring.MODES[analysis.method]
    item = parse_item(row, "items.jsonl")
    return {item.id} if mode.scores(item) else set()


def _scoring_part(row: dict) -> tuple:
    """What a model's result on an item depends on: an item changed there is not the item calibrated."""
    return tuple(
        json.dumps(row.get(name), sort_keys=True)
        for name in ("question", "choices", "answer", "reference_answer", "criteria", "images", "history")
    )


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def card_lines(split, analysis: Analysis) -> list[str]:
    """The dataset card's section on an anchor split: how it was chosen and how well it predicted."""
    about = split.about
    validation = about.get("validation") or {}
    command = {
        "pairwise": "pairwise --judge J --anchor ANCHOR.jsonl --predictions P.jsonl",
        "pointwise": "judge --judge J --predictions P.jsonl",
        "mcq": "mcq --model M",
    }
    lines = [
        f"## Anchor split `{split.name}` ({split_path(analysis.method)})",
        "",
        f"{len(split.anchors)} items whose {split.mode} results predict a model's score on the whole release "
        f"({len(split.items)} items), chosen on release {about.get('calibrated_on') or about.get('release')} from the "
        f"results of {len(about.get('models', []))} models ({', '.join(about.get('models', []))}). How: {about.get('chosen', '')}.",
        "",
    ]
    if about.get("not_calibrated"):
        lines += [
            f"{about['not_calibrated']} items are new or changed since then: they have their task's typical parameters "
            "until models are scored on them.",
            "",
        ]
    if validation:
        lines += [
            f"Validation, leaving each model out in turn (anchors chosen from the others' results): mean absolute error "
            f"{validation['mae']:.3f} (largest {validation['max_error']:.3f}); {validation['random']['draws']} stratified random "
            f"samples of the same size: median error {validation['random']['median_mae']:.3f}. The "
            f"{100 * 0.9:.0f}% interval held the real score for {100 * validation['coverage']:.0f}% of the models.",
            "",
            "| model | score | estimate | error | random samples' median error |",
            "| --- | ---: | ---: | ---: | ---: |",
        ]
        lines += [
            f"| {row['label']} | {row['score']:.3f} | {row['estimate']:.3f} | {row['error']:.3f} | {row['random_median_error']:.3f} |"
            for row in validation["models"]
        ]
        lines.append("")
    lines += [
        "```",
        f"python -m benchforge_harness {command.get(split.mode, split.mode)} --split {split.name} --out results/{split.name}",
        f"python -m benchforge_harness estimate --split {split.name} --results results/{split.name}",
        "```",
        "",
    ]
    return lines


def split_name(method: str) -> str:
    return f"{method}-anchors"


def split_path(method: str) -> str:
    return f"{SPLITS_FOLDER}/{split_name(method)}.json"


def split_download(analysis: Analysis) -> str:
    return json.dumps(analysis.split, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
