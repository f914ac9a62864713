"""Review pages: rounds (researchers open and close them, and read their numbers), a reviewer's
queue and the review page (keyboard), and the feedback fragment the item editor loads."""

from functools import partial

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext
from django.views.decorators.http import require_POST

from annotation.contract import item_payload
from annotation.models import Criterion, Item
from annotation.selectors import editors_of, get_item_for, with_payload_data
from benchforge import permissions, spreadsheet
from benchforge.errors import DomainError
from benchforge.navigation import changes_work_only, kept_for_benchmark
from benchforge.paging import keyset_page
from benchforge.roles import ANNOTATOR, RESEARCHER, REVIEWER, role_required
from curation.selectors import get_benchmark_for, task_labels

from . import selectors, services
from .forms import OpenRoundForm, ReviewForm
from .models import REASONS, ReviewRound

# Keys for the reasons on the review page, in the order REASONS lists them.
REASON_KEYS = "1234567890qwet"


REVIEW_QUEUE_PAGE_SIZE = 50


@role_required(REVIEWER)
def review_home(request, slug):
    benchmark = get_benchmark_for(request.user, slug)
    form = None
    if permissions.is_researcher(request.user):
        form = OpenRoundForm(request.POST or None, benchmark=benchmark)
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            review_round = services.open_round(
                benchmark,
                user=request.user,
                kind=data["kind"],
                rule=data["rule"],
                per_item=data["per_item"],
                tasks=list(data["tasks"]),
                authors=list(data["authors"]),
                reviewers=list(data["reviewers"]) or None,
                sample_per_task=data["sample_per_task"],
                seed=data["seed"] or 0,
                reveal_reviewers=data["reveal_reviewers"],
            )
            messages.success(
                request,
                gettext("Round %(n)s is opening: its items are being handed out (job #%(job)s).")
                % {"n": review_round.number, "job": review_round.job_id},
            )
            return redirect("review-round", slug=slug, number=review_round.number)
    elif request.method == "POST":
        raise PermissionDenied(gettext("Opening a review round needs the researcher role."))
    return render(
        request,
        "review/home.html",
        {
            "benchmark": benchmark,
            "rounds": selectors.rounds_of(benchmark),
            "summary": selectors.rounds_summary(benchmark),
            "pending": selectors.pending_reviews(request.user, benchmark).count(),
            "form": form,
        },
    )


@role_required(RESEARCHER)
def round_detail(request, slug, number):
    benchmark = get_benchmark_for(request.user, slug)
    review_round = selectors.get_round(benchmark, number)
    return render(
        request,
        "review/round.html",
        {
            "benchmark": benchmark,
            "round": review_round,
            "stats": selectors.round_stats(review_round),
            "gaps": selectors.quota_gaps(benchmark),
        },
    )


@role_required(RESEARCHER)
@require_POST
def round_close(request, slug, number):
    benchmark = get_benchmark_for(request.user, slug)
    review_round = services.close_round(selectors.get_round(benchmark, number), user=request.user)
    messages.success(request, gettext("Round %(n)s is closed.") % {"n": review_round.number})
    return redirect("review-round", slug=slug, number=number)


@role_required(RESEARCHER)
def round_csv(request, slug, number):
    benchmark = get_benchmark_for(request.user, slug)
    review_round = selectors.get_round(benchmark, number)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{benchmark.slug}-round-{review_round.number}.csv"'
    spreadsheet.writer(response).writerows(selectors.stats_rows(selectors.round_stats(review_round)))
    return response


@role_required(REVIEWER)
def review_queue(request, slug):
    benchmark = get_benchmark_for(request.user, slug)
    # Paged by keyset with a capped count (benchforge.paging): a reviewer's queue may hold thousands.
    rows = selectors.review_queue_rows(request.user, benchmark)
    keep = partial(kept_for_benchmark, benchmark.pk, f"review-queue:{request.user.pk}")  # until something changes there
    # Counted without the rows' join to the items: from the pending reviews' index alone (at a million
    # items the join made the count 19 ms, recounted after every verdict).
    counted = partial(selectors.pending_reviews, request.user, benchmark)
    page = keyset_page(request, rows, selectors.PENDING_ORDER, REVIEW_QUEUE_PAGE_SIZE, count_queryset=counted, keep_count=keep)
    # + "<id>/": no URL reversing per row
    review_url = reverse("review-item", args=[slug, 0]).removesuffix("0/")
    # Ready-made cells, each label translated once per page (the page is opened between reviews).
    kinds = {value: str(label).lower() for value, label in ReviewRound.Kind.choices}
    labels = task_labels(benchmark) if page.object_list else {}
    for review in page:
        review["round_text"] = f"{review['round__number']} ({kinds.get(review['round__kind'], review['round__kind'])})"
        review["task_text"] = labels.get(review["item__task_id"], "")
        review["assigned_on"] = timezone.localtime(review["assigned_at"]).date().isoformat() if review["assigned_at"] else ""
    return render(
        request,
        "review/queue.html",
        {"benchmark": benchmark, "page": page, "review_url": review_url, "review_text": gettext("review")},
    )


@role_required(REVIEWER)
def review_next(request, slug):
    """The oldest review still to give (links only: opening a review changes nothing)."""
    benchmark = get_benchmark_for(request.user, slug)
    review = selectors.next_pending(request.user, benchmark)
    if review is None:
        messages.success(request, gettext("Nothing left to review here."))
        return redirect("review-queue", slug=slug)
    return redirect("review-item", slug=slug, review_id=review.pk)


@role_required(REVIEWER)
@changes_work_only
def review_item(request, slug, review_id):
    benchmark = get_benchmark_for(request.user, slug)
    review = selectors.get_review_for(request.user, benchmark, review_id)
    form = ReviewForm(request.POST or None)
    if request.method == "POST":
        if form.is_valid():
            data = form.cleaned_data
            try:
                services.submit_review(
                    review,
                    user=request.user,
                    verdict=data["verdict"],
                    reasons=data["reasons"],
                    comment=data["comment"],
                    item_version=data["version"],
                )
            except DomainError as exc:
                messages.error(request, exc.message)
                return redirect("review-item", slug=slug, review_id=review.pk)
            messages.success(request, gettext("Review of item #%(id)s saved.") % {"id": review.item_id})
            following = selectors.next_pending(request.user, benchmark, after=review)
            if following is None:
                return redirect("review-queue", slug=slug)
            return redirect("review-item", slug=slug, review_id=following.pk)
        messages.error(request, gettext("Not saved:") + " " + " ".join(e for errors in form.errors.values() for e in errors))
    item = with_payload_data(Item.objects.filter(pk=review.item_id)).get()
    since, changes = selectors.changes_since_last_round(item, review.round)
    following = selectors.next_pending(request.user, benchmark, after=review)
    return render(
        request,
        "review/review.html",
        {
            "benchmark": benchmark,
            "review": review,
            "item": item,
            "payload": item_payload(item),
            "reasons": _keyed_reasons(),
            "criterion_kinds": Criterion.Kind.choices,
            "since": since,
            "changes": changes,
            "next_url": reverse("review-item", args=[slug, following.pk]) if following else "",
            "refusal": permissions.item_review_refusal(
                request.user, item, editors=editors_of(benchmark, [item.pk]).get(item.pk, ())
            ),
        },
    )


def _keyed_reasons() -> list[dict]:
    keys = iter(REASON_KEYS)
    return [
        {"group": gettext(group), "codes": [(code, label, next(keys)) for code, label in codes.items()]}
        for group, codes in REASONS.items()
    ]


@role_required(ANNOTATOR)
def item_feedback(request, slug, item_id):
    """Fragment for the item editor: the reviews behind the item's latest decision, and what
    changed since the version they judged."""
    item = get_item_for(request.user, slug, item_id)
    feedback = selectors.feedback_for(item, viewer_is_researcher=permissions.is_researcher(request.user))
    return render(request, "review/_feedback.html", {"feedback": feedback, "item": item, "benchmark": item.benchmark})
