"""Reads for review: rounds, a reviewer's queue, the feedback an author sees, round statistics
(outcomes, reasons, load and turnaround, inter-reviewer agreement) and quota gaps."""

import math
import statistics
from collections import Counter
from itertools import combinations

import krippendorff
import numpy as np
from django.db.models import Count, Max, Q
from django.http import Http404

from annotation.contract import item_snapshot
from annotation.models import Item, ItemRevision
from annotation.selectors import snapshot_changes
from annotation.workflow import ANSWERED, REJECTED
from benchforge import permissions
from benchforge.throttling import cache_get, cache_set
from curation.models import Task

from .models import REASON_LABELS, Review, ReviewRound, RoundItem

VERDICT_CODES = {Review.Verdict.ACCEPT: 0, Review.Verdict.REVISION: 1, Review.Verdict.REJECT: 2}


def rounds_of(benchmark):
    return ReviewRound.objects.filter(benchmark=benchmark).select_related("created_by", "closed_by").order_by("-number")


def get_round(benchmark, number: int) -> ReviewRound:
    found = ReviewRound.objects.filter(benchmark=benchmark, number=number).select_related("job").first()
    if found is None:
        raise Http404(f"No review round {number} in this benchmark.")
    return found


def pending_reviews(user, benchmark):
    """The user's reviews still to give, in open rounds: their review queue, oldest first, that is
    the earliest round first and, within a round, the items in the order they were written. (A
    round hands its reviews out most-constrained item first, so the order they were assigned in
    says nothing about the items' age.)"""
    return (
        Review.objects.filter(reviewer=user, round__benchmark=benchmark, round__status=ReviewRound.Status.OPEN, verdict="")
        .select_related("round", "item__task")
        .order_by(*PENDING_ORDER)
    )


# Round ids grow as round numbers do (both are given at a round's creation), and the partial index
# review_pending_in_order holds (reviewer, round, item, id) of pending reviews: a queue page is read
# from the index, where ordering by the round's number sorted all of a reviewer's pending reviews
# (about 20,000 each at a million items: 25 ms a page view).
PENDING_ORDER = ("round_id", "item_id", "id")


def waiting_for(user, benchmark):
    """The navigation's Review count: the user's reviews still to give; for a researcher also the
    answered items no round has taken yet (a round waits to be opened for them)."""
    pending = Review.objects.filter(reviewer=user, round__benchmark=benchmark, round__status=ReviewRound.Status.OPEN, verdict="")
    if not permissions.is_researcher(user):
        return pending
    return pending, Item.objects.filter(benchmark=benchmark, status=ANSWERED)


def review_queue_rows(user, benchmark):
    """The review queue page's rows: pending_reviews as plain rows of the columns the page shows (no
    model instances, no texts: the page is opened between every few reviews; the tasks' labels come
    from curation.selectors.task_labels, kept)."""
    return (
        pending_reviews(user, benchmark)
        .select_related(None)
        .values(*PENDING_ORDER, "assigned_at", "round__number", "round__kind", "item__task_id")
    )


def get_review_for(user, benchmark, review_id: int) -> Review:
    """One of the user's own reviews (nobody else's: reviewers do not see each other's verdicts)."""
    review = (
        Review.objects.filter(pk=review_id, reviewer=user, round__benchmark=benchmark)
        .select_related("round", "entry", "item__task__category", "item__author", "item__seed")
        .first()
    )
    if review is None:
        raise Http404("No such review among yours.")
    return review


def next_pending(user, benchmark, *, after: Review | None = None) -> Review | None:
    reviews = pending_reviews(user, benchmark)
    if after is not None:
        reviews = reviews.exclude(pk=after.pk)
    return reviews.first()


def changes_since_last_round(item: Item, review_round: ReviewRound) -> tuple[int | None, list[dict]]:
    """What changed in the item since an earlier round last judged it: (that version, field diffs);
    (None, []) when no earlier round did."""
    earlier = (
        RoundItem.objects.filter(item=item, round__number__lt=review_round.number, round__benchmark=review_round.benchmark)
        .exclude(outcome="")
        .order_by("-round__number")
        .first()
    )
    if earlier is None:
        return None, []
    then = ItemRevision.objects.filter(item=item, version__lte=earlier.version).order_by("-version").first()
    task_names = dict(Task.objects.filter(benchmark_id=item.benchmark_id).values_list("pk", "name"))
    if then is None:
        return earlier.version, []
    changes = snapshot_changes(then.snapshot, item_snapshot(item), task_names)
    return earlier.version, [c for c in changes if c["field"] != "status"]  # the content, not the workflow


def feedback_for(item: Item, *, viewer_is_researcher: bool = False) -> dict | None:
    """The reviews behind the item's latest decision, for its author: verdicts, reasons and
    comments (who gave them only once the round closed, and if the round reveals reviewers), and
    what changed in the item since the version they judged."""
    entry = RoundItem.objects.filter(item=item).exclude(outcome="").select_related("round").order_by("-round__number").first()
    if entry is None:
        return None
    review_round = entry.round
    reveal = viewer_is_researcher or (review_round.status == ReviewRound.Status.CLOSED and review_round.reveal_reviewers)
    reviews = [
        {
            "verdict": review.get_verdict_display(),
            "reasons": review.reason_labels,
            "comment": review.comment,
            "reviewer": review.reviewer.username if reveal else None,
        }
        for review in entry.reviews.exclude(verdict="").select_related("reviewer").order_by("id")
    ]
    judged = max([r.item_version for r in entry.reviews.exclude(verdict="")] or [entry.version])
    then = ItemRevision.objects.filter(item=item, version__lte=judged).order_by("-version").first()
    task_names = dict(Task.objects.filter(benchmark_id=item.benchmark_id).values_list("pk", "name"))
    changes = snapshot_changes(then.snapshot, item_snapshot(item), task_names) if then and item.version > judged else []
    return {
        "round": review_round.number,
        "outcome": entry.get_outcome_display(),
        "reviews": reviews,
        "judged_version": judged,
        "changes": [c for c in changes if c["field"] != "status"],
    }


# ---- numbers ------------------------------------------------------------------------------------


def _kappa(a: list[str], b: list[str]) -> float | None:
    """Cohen's kappa of two reviewers over the items both judged; None when undefined (fewer than
    two items, or both gave one same verdict throughout: no variation to agree beyond chance)."""
    if len(a) < 2 or len(set(a) | set(b)) < 2:
        return None
    # Imported here: scikit-learn takes about a second to import, and this module is loaded by every
    # process that starts Django (each command, web and job worker) through the release provenance.
    from sklearn.metrics import cohen_kappa_score

    value = cohen_kappa_score(a, b)
    return None if math.isnan(value) else float(value)


def agreement(reviews: list[tuple[int, int, str]]) -> dict:
    """Inter-reviewer agreement from (item, reviewer, verdict) triples of one round, on the items
    judged by two or more reviewers: percent agreement over reviewer pairs, Cohen's kappa per
    pair of reviewers (and their mean), Krippendorff's alpha (nominal) over everyone, missing
    ratings allowed."""
    by_item: dict[int, dict[int, str]] = {}
    for item, reviewer, verdict in reviews:
        by_item.setdefault(item, {})[reviewer] = verdict
    overlapping = {item: votes for item, votes in by_item.items() if len(votes) >= 2}
    pairs = [(a == b) for votes in overlapping.values() for a, b in combinations(votes.values(), 2)]
    reviewers = sorted({r for votes in overlapping.values() for r in votes})
    # Each pair's shared verdicts in one pass over the items (not one pass per pair: a round of
    # 20 reviewers has 190 pairs, and scanning every item for each took most of a second at 20,000 items).
    shared: dict[tuple[int, int], tuple[list[str], list[str]]] = {}
    for votes in overlapping.values():
        for first, second in combinations(sorted(votes), 2):
            mine, theirs = shared.setdefault((first, second), ([], []))
            mine.append(votes[first])
            theirs.append(votes[second])
    kappas = {}
    for pair in combinations(reviewers, 2):
        mine, theirs = shared.get(pair, ([], []))
        kappas[pair] = {"items": len(mine), "kappa": _kappa(mine, theirs)}
    alpha = None
    if overlapping:
        items = sorted(overlapping)
        matrix = np.full((len(reviewers), len(items)), np.nan)
        for col, item in enumerate(items):
            for row, reviewer in enumerate(reviewers):
                if reviewer in overlapping[item]:
                    matrix[row, col] = VERDICT_CODES[overlapping[item][reviewer]]
        try:
            alpha = float(krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal"))
        except ValueError:  # a single verdict in all the data: agreement beyond chance is undefined
            alpha = None
        if alpha is not None and math.isnan(alpha):
            alpha = None
    defined = [k["kappa"] for k in kappas.values() if k["kappa"] is not None]
    return {
        "overlapping_items": len(overlapping),
        "pairs": len(pairs),
        "percent_agreement": sum(pairs) / len(pairs) if pairs else None,
        "kappa_pairs": kappas,
        "mean_kappa": sum(defined) / len(defined) if defined else None,
        "alpha": alpha,
    }


ROUND_STATS_SECONDS = 24 * 3600


def round_stats(review_round: ReviewRound) -> dict:
    """Everything the round page, the dashboard and the API report about one round. Computing it
    reads every review of the round (most of a second at 40,000 reviews), so it is kept in the
    cache under the round's state: a new verdict, a close or a reopening changes the key, so the
    numbers are never stale; an unchanged round costs one aggregate over an index."""
    state = review_round.reviews.aggregate(n=Count("*"), done=Count("submitted_at"), last=Max("submitted_at"))
    key = "review:round-stats:{}:{}:{}:{}:{}:{}:{}".format(
        review_round.pk,
        review_round.created_at.timestamp() if review_round.created_at else "",
        review_round.status,
        review_round.closed_at.timestamp() if review_round.closed_at else "",
        state["n"],
        state["done"],
        state["last"].timestamp() if state["last"] else "",
    )
    stats = cache_get(key, consequence="review round statistics are computed afresh until it is back")
    if stats is None:
        stats = compute_round_stats(review_round)
        cache_set(key, stats, ROUND_STATS_SECONDS, consequence="review round statistics are computed afresh until it is back")
    return stats


def compute_round_stats(review_round: ReviewRound) -> dict:
    outcomes = Counter(dict(review_round.entries.values_list("outcome").annotate(n=Count("*")).order_by()))
    reviews = list(
        review_round.reviews.values_list(
            "entry__item_id", "reviewer_id", "reviewer__username", "verdict", "reasons", "assigned_at", "submitted_at"
        )
    )
    done = [r for r in reviews if r[3]]
    reasons = Counter(code for r in done for code in r[4])
    people: dict[int, dict] = {}
    for _item, reviewer, username, verdict, _reasons, assigned, submitted in reviews:
        row = people.setdefault(reviewer, {"reviewer": username, "assigned": 0, "done": 0, "hours": []})
        row["assigned"] += 1
        if verdict:
            row["done"] += 1
            row["hours"].append((submitted - assigned).total_seconds() / 3600)
    load = [
        {
            "reviewer": p["reviewer"],
            "assigned": p["assigned"],
            "done": p["done"],
            "median_hours": round(statistics.median(p["hours"]), 2) if p["hours"] else None,
        }
        for p in sorted(people.values(), key=lambda p: p["reviewer"])
    ]
    names = {reviewer: username for _i, reviewer, username, *_ in reviews}
    agreed = agreement([(item, reviewer, verdict) for item, reviewer, _u, verdict, *_ in done])
    agreed["kappa_pairs"] = [
        {"reviewers": [names[a], names[b]], **value} for (a, b), value in agreed["kappa_pairs"].items() if value["items"]
    ]
    return {
        "round": review_round.number,
        "kind": review_round.kind,
        "rule": review_round.rule,
        "status": review_round.status,
        "items": sum(outcomes.values()),
        "pending": outcomes.get("", 0),
        "accepted": outcomes.get(RoundItem.Outcome.ACCEPTED, 0),
        "revision": outcomes.get(RoundItem.Outcome.REVISION, 0),
        "rejected": outcomes.get(RoundItem.Outcome.REJECTED, 0),
        "unreviewed": outcomes.get(RoundItem.Outcome.UNREVIEWED, 0),
        "reviews_assigned": len(reviews),
        "reviews_done": len(done),
        "reasons": [{"code": code, "label": REASON_LABELS.get(code, code), "count": n} for code, n in reasons.most_common()],
        "load": load,
        "agreement": agreed,
    }


def stats_rows(stats: dict) -> list[list]:
    """The same numbers as CSV rows: (section, name, value, detail)."""
    rows = [["section", "name", "value", "detail"]]
    for name in ("items", "pending", "accepted", "revision", "rejected", "unreviewed", "reviews_assigned", "reviews_done"):
        rows.append(["outcomes", name, stats[name], ""])
    rows += [["reasons", r["code"], r["count"], r["label"]] for r in stats["reasons"]]
    rows += [
        ["load", r["reviewer"], r["done"], f"assigned {r['assigned']}; median hours {r['median_hours']}"] for r in stats["load"]
    ]
    a = stats["agreement"]
    rows += [
        ["agreement", "overlapping_items", a["overlapping_items"], ""],
        ["agreement", "percent_agreement", a["percent_agreement"], f"over {a['pairs']} reviewer pairs"],
        ["agreement", "mean_kappa", a["mean_kappa"], "Cohen's kappa, mean over reviewer pairs"],
        ["agreement", "alpha", a["alpha"], "Krippendorff's alpha, nominal"],
    ]
    rows += [["kappa", " / ".join(p["reviewers"]), p["kappa"], f"{p['items']} shared items"] for p in a["kappa_pairs"]]
    return rows


def rounds_summary(benchmark) -> list[dict]:
    """Per round: items accepted, sent back, rejected (the "samples revised per round" chart)."""
    counts = (
        RoundItem.objects.filter(round__benchmark=benchmark)
        .values("round__number", "round__kind", "outcome")
        .annotate(n=Count("*"))  # from the (round, outcome) index alone
        .order_by("round__number")
    )
    rows: dict[int, dict] = {}
    for c in counts:
        row = rows.setdefault(
            c["round__number"],
            {
                "round": c["round__number"],
                "kind": c["round__kind"],
                "accepted": 0,
                "revision": 0,
                "rejected": 0,
                "unreviewed": 0,
                "pending": 0,
            },
        )
        row[c["outcome"] or "pending"] += c["n"]
    for row in rows.values():  # stacked bar geometry (100 units high, bottom at 105) for the chart
        total, bottom = sum(row[k] for k in ("accepted", "revision", "rejected", "unreviewed", "pending")) or 1, 105
        for name in ("accepted", "revision", "rejected"):
            height = round(100 * row[name] / total)
            row[f"h_{name}"], row[f"y_{name}"] = height, bottom - height
            bottom -= height
    return list(rows.values())


def quota_gaps(benchmark) -> list[dict]:
    """Tasks whose seed items, rejected ones left out, no longer cover the quota: how many are
    short, so replacements can be assigned."""
    rows = (
        Task.objects.filter(benchmark=benchmark)
        .annotate(
            live=Count("items", filter=Q(items__seed__isnull=True, items__is_external=False) & ~Q(items__status=REJECTED)),
            rejected=Count("items", filter=Q(items__seed__isnull=True, items__status=REJECTED)),
        )
        .filter(rejected__gt=0)
        .select_related("category__parent")
    )
    return [
        {"task": t, "quota": t.quota, "live": t.live, "rejected": t.rejected, "short": max(0, t.quota - t.live)}
        for t in rows
        if t.quota > t.live
    ]


def review_overview(benchmark) -> dict:
    """For the dashboard: the per-round chart and the latest round's agreement."""
    summary = rounds_summary(benchmark)
    latest = (
        ReviewRound.objects.filter(benchmark=benchmark).exclude(status=ReviewRound.Status.OPENING).order_by("-number").first()
    )
    return {"summary": summary, "latest": round_stats(latest) if latest else None}


# ---- what a release records of review (exports.provenance) ----------------------------------------


def verdicts_for_items(item_ids) -> dict[int, list[dict]]:
    """{item id: its given verdicts, earliest round first}: round number and kind, reviewer, verdict."""
    out: dict[int, list[dict]] = {}
    rows = (
        Review.objects.filter(item_id__in=item_ids)
        .exclude(verdict="")
        .values_list("item_id", "round__number", "round__kind", "reviewer__username", "verdict")
        .order_by("round__number", "id")
    )
    for item_id, number, kind, reviewer, verdict in rows:
        out.setdefault(item_id, []).append({"round": number, "kind": kind, "reviewer": reviewer, "verdict": verdict})
    return out


def closed_round_outcomes(benchmark) -> list[dict]:
    """The benchmark's closed rounds in order, each with how many items it decided each way
    ("pending" for an item it left undecided)."""
    rounds = []
    for review_round in ReviewRound.objects.filter(benchmark=benchmark, status=ReviewRound.Status.CLOSED).order_by("number"):
        outcomes = Counter(RoundItem.objects.filter(round=review_round).values_list("outcome", flat=True))
        rounds.append(
            {"round": review_round.number, "kind": review_round.kind, **{k or "pending": n for k, n in outcomes.items()}}
        )
    return rounds
