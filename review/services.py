"""Review rounds: opening one over a scope, giving verdicts, resolving overlapping verdicts by the
round's rule, closing. Item statuses move only through annotation's transition table:
  cross-review   answered -> in review -> accepted | revision (back to its author) | rejected
  expert review  accepted -> (stays accepted) | revision | rejected
"""

import random
from collections import Counter

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Max
from django.utils import timezone, translation
from django.utils.translation import gettext, gettext_noop, pgettext_lazy

from annotation.models import Item
from annotation.selectors import editors_of
from annotation.services import change_status, change_status_many, requeue_for_author
from annotation.workflow import ACCEPTED, ANSWERED, IN_REVIEW, REJECTED, RELEASED, REVISION
from benchforge import permissions
from benchforge.concurrency import lock, lock_rows, retried
from benchforge.errors import Conflict, DomainError, NotAllowed, StaleVersion
from benchforge.roles import RESEARCHER, REVIEWER
from curation.models import Benchmark
from jobs import reports
from jobs import services as jobs

from .models import REASON_LABELS, Review, ReviewRound, RoundItem

OPEN_ROUND_JOB = "review_open_round"
MAX_REVIEWERS_PER_ITEM = 5
REVIEW_ACTION = "reviewed"  # ItemRevision.action of a status change a review decided
CHUNK = 500

Verdict, Outcome, Kind, Rule = Review.Verdict, RoundItem.Outcome, ReviewRound.Kind, ReviewRound.Rule
OUTCOME_OF = {Verdict.ACCEPT: Outcome.ACCEPTED, Verdict.REVISION: Outcome.REVISION, Verdict.REJECT: Outcome.REJECTED}


# ---- the rule that resolves overlapping verdicts ------------------------------------------------


def decide(rule: str, verdicts: list[str]) -> str:
    """The outcome of an item from its reviewers' verdicts under `rule`."""
    if not verdicts:
        raise ValueError("no verdict to decide from")
    if rule == Rule.UNANIMOUS:
        if all(v == Verdict.ACCEPT for v in verdicts):
            return Outcome.ACCEPTED
        return Outcome.REJECTED if all(v == Verdict.REJECT for v in verdicts) else Outcome.REVISION
    if rule == Rule.ANY_REJECT:
        if Verdict.REJECT in verdicts:
            return Outcome.REJECTED
        return Outcome.REVISION if Verdict.REVISION in verdicts else Outcome.ACCEPTED
    if rule == Rule.MAJORITY:
        ranked = Counter(verdicts).most_common()
        if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
            return Outcome.REVISION  # no majority: the author looks at it again
        return OUTCOME_OF[ranked[0][0]]
    raise ValueError(f"unknown rule {rule!r}")


# ---- opening a round --------------------------------------------------------------------------


def _pool(benchmark, kind: str, reviewers, user) -> list:
    """The reviewers a round draws from: those named, else every member who may review (cross) or
    every researcher member plus the one opening it (expert)."""
    users = get_user_model()
    if reviewers is None:
        if kind == Kind.EXPERT:
            pool = list(users.objects.filter(groups__name=RESEARCHER, benchmarks=benchmark)) + [user]
        else:
            pool = list(users.objects.filter(groups__name__in=[REVIEWER, RESEARCHER], benchmarks=benchmark))
    else:
        pool = list(reviewers)
    pool = sorted({u.pk: u for u in pool if u.is_active}.values(), key=lambda u: u.pk)
    for person in pool:
        if kind == Kind.EXPERT and not permissions.is_researcher(person):
            raise DomainError(
                gettext("%(name)s is not a researcher: expert verification is done by researchers.") % {"name": person.username}
            )
        if kind == Kind.CROSS and not (permissions.may_review(person) and permissions.is_member(person, benchmark)):
            raise DomainError(
                gettext("%(name)s cannot review here: reviewers need the reviewer role and membership.")
                % {"name": person.username}
            )
    if not pool:
        if kind == Kind.EXPERT:
            raise DomainError(gettext("No reviewer to draw from: add a researcher to the benchmark, or name the reviewers."))
        raise DomainError(
            gettext("No reviewer to draw from: add a member with the reviewer role to the benchmark, or name the reviewers.")
        )
    return pool


def _statuses(kind: str, chosen: bool) -> tuple[str, ...]:
    """The statuses a round takes: answered items (cross-review) or accepted ones (expert); an expert
    round opened on chosen items (an item analysis's flags) also takes released ones, whose verdicts
    are recorded but cannot move them (a release never changes; the next one may leave them out)."""
    if kind == Kind.CROSS:
        return (ANSWERED,)
    return (ACCEPTED, RELEASED) if chosen else (ACCEPTED,)


def _scope(benchmark, kind: str, tasks, authors, sample_per_task: int | None, seed: int, items=None):
    found = Item.objects.filter(benchmark=benchmark, status__in=_statuses(kind, items is not None))
    if items is not None:
        found = found.filter(pk__in=list(items))
    items = found
    if tasks:
        items = items.filter(task__in=tasks)
    if authors:
        items = items.filter(author__in=authors)
    rows = list(items.order_by("pk").values_list("pk", "task_id", "author_id", "assignee_id"))
    if sample_per_task:
        rng, by_task = random.Random(seed), {}
        for row in rows:
            by_task.setdefault(row[1], []).append(row)
        rows = sorted(r for group in by_task.values() for r in rng.sample(group, min(sample_per_task, len(group))))
    return rows


def open_round(
    benchmark,
    *,
    user,
    kind: str = Kind.CROSS,
    tasks=(),
    authors=(),
    reviewers=None,
    per_item: int = 1,
    rule: str = Rule.MAJORITY,
    sample_per_task: int | None = None,
    seed: int = 0,
    reveal_reviewers: bool = True,
    items=None,
    notes: dict | None = None,
) -> ReviewRound:
    """Open the benchmark's next round over the items in scope (cross-review: answered items;
    expert verification: accepted ones, or a random sample of `sample_per_task` per task) and
    give each item `per_item` reviewers who did not write it, spreading the load evenly. The
    items move into the round as a job (thousands of items are fine); the round opens when it ends.
    `items`: an expert round on these items only (accepted or released), each with its `notes`
    ({item id: why it is here}) shown to its reviewers."""
    permissions.require_researcher(user, "Opening a review round")
    _check_round_settings(kind, rule, per_item, sample_per_task, items)
    _refuse_if_busy(benchmark)
    pool = _pool(benchmark, kind, reviewers, user)
    rows = _scope(benchmark, kind, tasks, authors, sample_per_task, seed, items)
    if not rows:
        if items is not None:
            raise DomainError(gettext("None of these items is accepted or released: nothing to review."))
        if kind == Kind.EXPERT:
            raise DomainError(gettext("No accepted item in this scope: nothing to review."))
        raise DomainError(gettext("No answered item (submitted and waiting for review) in this scope: nothing to review."))
    _hardest_first(benchmark, rows, pool, per_item)
    with transaction.atomic():
        # One round at a time is the benchmark's rule: a second request waits here, then sees this round.
        lock(Benchmark, benchmark.pk)
        _refuse_if_busy(benchmark)
        number = (benchmark.review_rounds.aggregate(n=Max("number"))["n"] or 0) + 1
        review_round = ReviewRound.objects.create(
            benchmark=benchmark,
            number=number,
            kind=kind,
            rule=rule,
            reviewers_per_item=per_item,
            reveal_reviewers=reveal_reviewers,
            created_by=user,
            scope={
                "tasks": [getattr(t, "pk", t) for t in tasks],
                "authors": [getattr(a, "pk", a) for a in authors],
                "sample_per_task": sample_per_task,
                "seed": seed,
                "chosen": items is not None,
            },
        )
        taken = [r[0] for r in rows]
        params = {"round": review_round.pk, "items": taken, "reviewers": [p.pk for p in pool]}
        if notes:
            params["notes"] = {str(pk): str(notes[pk]) for pk in taken if notes.get(pk)}
        job = jobs.create_job(OPEN_ROUND_JOB, user=user, benchmark=benchmark, total=len(rows), params=params)
        ReviewRound.objects.filter(pk=review_round.pk).update(job=job)
        review_round.job = job
        jobs.enqueue(job)
    return review_round


def _check_round_settings(kind: str, rule: str, per_item: int, sample_per_task: int | None, items) -> None:
    if items is not None and kind != Kind.EXPERT:
        raise DomainError(gettext("A round on chosen items is an expert verification."))
    if kind not in Kind.values or rule not in Rule.values:
        raise DomainError(gettext("Choose a round kind (cross or expert) and a rule (unanimous, majority or any_reject)."))
    if not 1 <= int(per_item) <= MAX_REVIEWERS_PER_ITEM:
        raise DomainError(gettext("Each item gets 1 to %(max)s reviewers.") % {"max": MAX_REVIEWERS_PER_ITEM})
    if sample_per_task is not None and (kind != Kind.EXPERT or int(sample_per_task) < 1):
        raise DomainError(gettext("A sample per task is for expert verification, and at least 1."))


def _hardest_first(benchmark, rows: list, pool: list, per_item: int) -> None:
    """Refuse a round where an item has fewer possible reviewers (the pool but its author, assignee
    and editors) than it needs; else sort `rows` so the items with the fewest possible reviewers
    are handed out first, so the even spread of the load never strands them (a reviewer who wrote
    many items can take none of those)."""
    pool_ids = {p.pk for p in pool}
    editors = editors_of(benchmark)
    possible = {pk: pool_ids - {author, assignee, *editors.get(pk, ())} for pk, _task, author, assignee in rows}
    short = [pk for pk, *_ in rows if len(possible[pk]) < per_item]
    if short:
        raise DomainError(
            gettext(
                "%(n)s item(s) (e.g. #%(id)s) would need %(per_item)s reviewer(s) other than their author, "
                "assignee and editors, but only %(pool)s reviewer(s) are in the pool: add reviewers or lower the overlap."
            )
            % {"n": len(short), "id": short[0], "per_item": per_item, "pool": len(pool)}
        )
    rows.sort(key=lambda r: (len(possible[r[0]]), r[0]))


def _refuse_if_busy(benchmark) -> None:
    busy = benchmark.review_rounds.exclude(status=ReviewRound.Status.CLOSED).first()
    if busy:
        raise Conflict(
            f"Round {busy.number} is still {busy.get_status_display().lower()}: close it before opening another.",
            extra={"existing": {"round": busy.number, "status": busy.status}},
        )


# What the opening job reports per item (jobs.reports: shown in the reader's language).
TO_REVIEWERS = gettext_noop("to %(reviewers)s")
NO_LONGER_ANSWERED = gettext_noop("no longer answered (%(status)s): not in this round")
NO_LONGER_ACCEPTED = gettext_noop("no longer accepted (%(status)s): not in this round")
reports.declare(TO_REVIEWERS, NO_LONGER_ANSWERED, NO_LONGER_ACCEPTED)
reports.declare_result_labels({"reviews": pgettext_lazy("job result", "Reviews")})


def run_round_opening(run) -> dict:
    """The job body: move the round's items into it in chunks, each chunk's status changes,
    round entries and reviewer assignments committed together; resumable."""
    review_round = ReviewRound.objects.select_related("benchmark", "created_by").get(pk=run.params["round"])
    pool = list(get_user_model().objects.filter(pk__in=run.params["reviewers"]).order_by("pk"))
    load = Counter(Review.objects.filter(round=review_round).values_list("reviewer_id", flat=True))
    editors = editors_of(review_round.benchmark)
    takes = _statuses(review_round.kind, bool(review_round.scope.get("chosen")))
    notes = run.params.get("notes", {})
    done = run.done_keys()
    todo = [pk for pk in run.params["items"] if f"item {pk}" not in done]
    run.set_total(len(run.params["items"]))
    for start in range(0, len(todo), CHUNK):
        order = {pk: n for n, pk in enumerate(todo[start : start + CHUNK])}
        chunk = sorted(Item.objects.filter(pk__in=order), key=lambda i: order[i.pk])
        with transaction.atomic():
            if review_round.kind == Kind.CROSS:
                moved = change_status_many(
                    [i for i in chunk if i.status == ANSWERED],
                    IN_REVIEW,
                    user=review_round.created_by,
                    action=REVIEW_ACTION,
                    note=f"In review round {review_round.number}.",
                )
            else:
                moved = [i for i in chunk if i.status in takes]
            moved.sort(key=lambda i: order[i.pk])  # the planned order: most constrained first
            entries = RoundItem.objects.bulk_create(
                RoundItem(round=review_round, item=i, version=i.version, note=notes.get(str(i.pk), "")) for i in moved
            )
            reviews, notes = [], []
            for entry, item in zip(entries, moved):
                own = {item.author_id, item.assignee_id, *editors.get(item.pk, ())}
                eligible = [p for p in pool if p.pk not in own]
                chosen = sorted(eligible, key=lambda p: (load[p.pk], p.pk))[: review_round.reviewers_per_item]
                for person in chosen:
                    load[person.pk] += 1
                    reviews.append(Review(round=review_round, entry=entry, item=item, reviewer=person))
                to = reports.text(TO_REVIEWERS, reviewers=", ".join(p.username for p in chosen))
                notes.append((reports.text("item %(id)s", id=item.pk), "ok", to, {"reviewers": len(chosen)}))
            Review.objects.bulk_create(reviews)
            taken = {item.pk for item in moved}
            notes += [
                (
                    reports.text("item %(id)s", id=i.pk),
                    "skipped",
                    reports.text(
                        NO_LONGER_ANSWERED if review_round.kind == Kind.CROSS else NO_LONGER_ACCEPTED,
                        status=str(i.status_label),
                    ),
                    {},
                )
                for i in chunk
                if i.pk not in taken
            ]
            run.record_many(notes)
    ReviewRound.objects.filter(pk=review_round.pk, status=ReviewRound.Status.OPENING).update(status=ReviewRound.Status.OPEN)
    counts = run.outcome_counts()
    return {"items": counts.get("ok", 0), "skipped": counts.get("skipped", 0), "reviews": sum(load.values())}


# ---- reviewing --------------------------------------------------------------------------------


def submit_review(review: Review, *, user, verdict: str, reasons=(), comment: str = "", item_version: int) -> Review:
    """A reviewer's verdict on the version they read. Refused when it is not theirs, when the
    round closed or already decided the item, for their own work, or when the item changed since
    they opened it (they must judge the current version). The same verdict sent twice is one verdict;
    a different one for an item the round already decided is refused (409)."""
    reasons = list(dict.fromkeys(reasons))
    comment = comment.strip()
    with transaction.atomic():
        # The round entry is what a verdict decides: lock it first, then read everything after the lock
        # (another reviewer's verdict, the round's closing and the item's version are all seen).
        entry = lock(RoundItem, Review.objects.values_list("entry_id", flat=True).get(pk=review.pk))
        review = lock(Review, review.pk)
        review_round = ReviewRound.objects.get(pk=entry.round_id)
        item = Item.objects.select_related("benchmark", "author").get(pk=entry.item_id)
        if review.reviewer_id != user.pk:
            raise NotAllowed("This review is assigned to someone else.")
        same = bool(review.verdict) and review.verdict == verdict and review.reasons == reasons and review.comment == comment
        if same and review.item_version == int(item_version):
            return review  # sent twice: the first one counted
        if not review_round.is_open:
            raise Conflict(
                f"Round {review_round.number} is {review_round.get_status_display().lower()}: its reviews cannot change."
            )
        if entry.outcome:
            raise Conflict(
                f"Round {review_round.number} already decided item #{item.pk} ({entry.get_outcome_display().lower()})"
                + (f" on your verdict '{review.get_verdict_display().lower()}'." if review.verdict else ".")
            )
        permissions.require(
            permissions.item_review_refusal(user, item, editors=editors_of(item.benchmark, [item.pk]).get(item.pk, ()))
        )
        if int(item_version) != item.version:
            raise StaleVersion(
                f"Item #{item.pk} changed since you opened it (you read version {item_version}, it is now version "
                f"{item.version}): reload it and judge the current version.",
                extra={"current_version": item.version},
            )
        if verdict not in Verdict.values:
            raise DomainError(gettext("Choose a verdict: accept, revision (needs revision) or reject."))
        unknown = [r for r in reasons if r not in REASON_LABELS]
        if unknown:
            raise DomainError(gettext("Unknown reason code(s): %(codes)s.") % {"codes": ", ".join(unknown)})
        if verdict != Verdict.ACCEPT and not reasons:
            raise DomainError(gettext("Give at least one reason when the item needs revision or is rejected."))
        review.verdict, review.reasons, review.comment = verdict, reasons, comment
        review.item_version, review.submitted_at = item.version, timezone.now()
        review.save(update_fields=["verdict", "reasons", "comment", "item_version", "submitted_at"])
        if not entry.reviews.filter(verdict="").exists():
            _resolve(entry, review_round, by=user)
    _close_if_complete(review_round)
    return review


def _resolve(entry: RoundItem, review_round: ReviewRound, *, by) -> str:
    """Decide an item from the verdicts given (at least one) and move it accordingly."""
    reviews = list(entry.reviews.exclude(verdict="").select_related("reviewer"))
    outcome = decide(review_round.rule, [r.verdict for r in reviews])
    item = entry.item
    with translation.override("en"):  # the item's history keeps one language, whoever closed the round
        note = f"Review round {review_round.number}: {RoundItem.Outcome(outcome).label.lower()}." + "".join(
            f" [{', '.join(r.reason_labels) or 'accept'}] {r.comment}".rstrip() for r in reviews if r.verdict != Verdict.ACCEPT
        )
    target = {Outcome.ACCEPTED: ACCEPTED, Outcome.REVISION: REVISION, Outcome.REJECTED: REJECTED}[outcome]
    # A released item stays as it was released (its owners may leave it out of the next release);
    # an expert round's acceptance leaves an accepted item as it is.
    if item.status != RELEASED and item.status != target:
        item = change_status(item, target, user=by, action=REVIEW_ACTION, note=note)
        if target == REVISION:
            requeue_for_author(item, by=by)  # back in its author's queue, with the reviews to read
    entry.outcome, entry.decided_at = outcome, timezone.now()
    entry.save(update_fields=["outcome", "decided_at"])
    return outcome


def _close_if_complete(review_round: ReviewRound) -> None:
    if review_round.is_open and not review_round.entries.filter(outcome="").exists():
        ReviewRound.objects.filter(pk=review_round.pk, status=ReviewRound.Status.OPEN).update(
            status=ReviewRound.Status.CLOSED, closed_at=timezone.now()
        )


@retried
def close_round(review_round: ReviewRound, *, user) -> ReviewRound:
    """Close a round now: items with some verdicts are decided from those; items nobody reviewed
    leave it as they came (a cross-review item waits for the next round). Closing a closed round
    changes nothing."""
    permissions.require_researcher(user, "Closing a review round")
    with transaction.atomic():
        review_round = lock(ReviewRound, review_round.pk)
        if review_round.status == ReviewRound.Status.CLOSED:
            return review_round
        if review_round.status == ReviewRound.Status.OPENING:
            raise Conflict(
                gettext("Round %(n)s is still being opened (job #%(job)s); wait for it, then close it.")
                % {"n": review_round.number, "job": review_round.job_id}
            )
        # Its undecided entries, locked: a verdict being given now finishes first, and its entry is then decided.
        for entry in lock_rows(review_round.entries.filter(outcome="")):
            if entry.reviews.exclude(verdict="").exists():
                _resolve(entry, review_round, by=user)
                continue
            if review_round.kind == Kind.CROSS:
                change_status(
                    entry.item,
                    ANSWERED,
                    user=user,
                    action=REVIEW_ACTION,
                    note=f"Review round {review_round.number} closed before a review: waits for the next round.",
                )
            entry.outcome, entry.decided_at = Outcome.UNREVIEWED, timezone.now()
            entry.save(update_fields=["outcome", "decided_at"])
        review_round.status, review_round.closed_at, review_round.closed_by = ReviewRound.Status.CLOSED, timezone.now(), user
        review_round.save(update_fields=["status", "closed_at", "closed_by"])
    return review_round
