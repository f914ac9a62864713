"""Pages of the human-evaluation stage: studies (researchers plan, follow and read them), a rater's
queue and the keyboard rating page. Raters' pages never name a model, show the judge's verdict or
another rater's rating."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.files.storage import default_storage
from django.core.paginator import Paginator
from django.http import FileResponse, Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.text import slugify
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_POST

from benchforge import permissions
from benchforge.errors import DomainError
from benchforge.inputs import accepts_uploads, is_digits
from benchforge.navigation import changes_work_only
from benchforge.roles import ANNOTATOR, RESEARCHER, role_required
from curation.selectors import get_benchmark_for
from exports import card

from . import exporting, selectors, services
from .forms import ImportForm, PlanForm

CHART_TITLES = {"task": _("Judge vs people per task: %(name)s"), "model": _("Judge vs people per model: %(name)s")}
SCORE_KEYS = [(n, str(n % 10)) for n in range(1, 11)]  # 10 is key 0
VOTE_CHOICES = [
    ("answer1", _("Answer 1 is better"), "1"),
    ("answer2", _("Answer 2 is better"), "2"),
    ("unable_one", _("Unable to decide: both right or both wrong (closed question)"), "3"),
    ("unable_two", _("Unable to decide: both have serious factual or ethical problems"), "4"),
]


def choice_keys(options: dict) -> list[tuple]:
    """[(value, option text, number key, letter key)] for an extraction check: key n or the
    option's letter picks the n-th option shown; 0 is "none of them"."""
    keys = [(letter, text, str(n), letter.lower()) for n, (letter, text) in enumerate(options.items(), 1) if n <= 9]
    return keys + [(services.NO_CHOICE, gettext("None: the reply commits to no option"), "0", "")] if options else []


def _study(request, slug, number):
    benchmark = get_benchmark_for(request.user, slug)
    return benchmark, selectors.get_study_for(request.user, benchmark, number)


@role_required(ANNOTATOR)
def home(request, slug):
    benchmark = get_benchmark_for(request.user, slug)
    studies = []
    for study in selectors.studies_for(request.user, benchmark):
        rater = selectors.rater_of(study, request.user)
        studies.append((study, selectors.progress(rater) if rater else None))
    return render(request, "humaneval/home.html", {"benchmark": benchmark, "studies": studies})


@role_required(RESEARCHER)
def plan(request, slug):
    benchmark = get_benchmark_for(request.user, slug)
    form = PlanForm(request.POST or None, benchmark=benchmark)
    estimate = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        settings = {
            "mode": data["mode"],
            "scores": list(data["scores"]),
            "raters": list(data["raters"]),
            "per_task": data["per_task"],
            "ratings_per_item": data["ratings_per_item"],
            "seed": data["seed"],
            "minutes_per_rating": data["minutes_per_rating"],
        }
        try:
            if "start" in request.POST:
                study = services.create_study(data["release"], user=request.user, title=data["title"], **settings)
                messages.success(
                    request,
                    gettext("Study %(number)s started: its raters find it in Human evaluation.") % {"number": study.number},
                )
                return redirect("humaneval-study", slug=slug, number=study.number)
            estimate = services.plan_study(data["release"], user=request.user, **settings).summary()
        except DomainError as exc:
            messages.error(request, exc.message)
    return render(request, "humaneval/plan.html", {"benchmark": benchmark, "form": form, "estimate": estimate})


@role_required(ANNOTATOR)
def study_detail(request, slug, number):
    benchmark, study = _study(request, slug, number)
    refusal = selectors.figures_refusal(request.user, study)
    if refusal:  # raters never see figures or verdicts before their own ratings are in
        if permissions.is_researcher(request.user):
            messages.info(request, refusal)
        return redirect("humaneval-queue", slug=slug, number=number)
    figures = services.current_figures(study)
    stale = selectors.figures_out_of_date(study)
    return render(
        request,
        "humaneval/study.html",
        {
            "benchmark": benchmark,
            "study": study,
            "progress": selectors.study_progress(study),
            "figures": selectors.with_reasons(figures),
            "figures_stale": stale,
            "headline": selectors.headline(study, figures),
            "scores": selectors.scores_shown(study),
            "score_endpoints": study.scores.values_list("endpoint", "judge"),  # the demo notice's: never answer sets
            "import_form": ImportForm(),
        },
    )


@role_required(ANNOTATOR)
def queue(request, slug, number):
    benchmark, study = _study(request, slug, number)
    rater = selectors.rater_of(study, request.user)
    if rater is None:
        raise Http404(gettext("You are not a rater of study %(number)s.") % {"number": study.number})
    page = Paginator(selectors.queue_of(rater).only("pk", "position", "saved_at"), 50).get_page(request.GET.get("page"))
    return render(
        request,
        "humaneval/queue.html",
        {"benchmark": benchmark, "study": study, "page": page, "progress": selectors.progress(rater), "rater": rater},
    )


@role_required(ANNOTATOR)
def next_rating(request, slug, number):
    benchmark, study = _study(request, slug, number)
    rater = selectors.rater_of(study, request.user)
    pending = selectors.next_pending(rater) if rater else None
    if pending is None:
        messages.info(request, gettext("Nothing left to rate in this study."))
        return redirect("humaneval-queue", slug=slug, number=number) if rater else redirect("humaneval-home", slug=slug)
    return redirect("humaneval-rate", slug=slug, number=number, pk=pending.pk)


@role_required(ANNOTATOR)
@changes_work_only
def rate(request, slug, number, pk):
    benchmark, study = _study(request, slug, number)
    rating = selectors.get_rating_for(request.user, study, pk)
    autosave = request.headers.get("X-Autosave") == "1"
    if request.method == "POST":
        raw = request.POST.get("score", "")
        try:
            services.save_rating(
                rating,
                user=request.user,
                score=int(raw) if is_digits(raw) and len(raw) <= 2 else None,
                vote=request.POST.get("vote", ""),
                choice=request.POST.get("choice", ""),
                reason=request.POST.get("reason", ""),
            )
        except DomainError as exc:
            if autosave:
                return JsonResponse({"saved": False, "detail": exc.message}, status=exc.status)
            messages.error(request, gettext("Not saved: %(reason)s") % {"reason": exc.message})
            return redirect("humaneval-rate", slug=slug, number=number, pk=pk)
        if autosave:
            return JsonResponse({"saved": True, "progress": selectors.progress(rating.rater)})
        following = selectors.next_pending(rating.rater, after=rating.position)
        if following is None:
            messages.success(request, gettext("Saved. You have rated everything in this study: thank you."))
            return redirect("humaneval-queue", slug=slug, number=number)
        return redirect("humaneval-rate", slug=slug, number=number, pk=following.pk)
    shown = selectors.rating_view(rating)
    following = selectors.next_pending(rating.rater, after=rating.position)
    context = {
        "benchmark": benchmark,
        "study": study,
        "rating": rating,
        "shown": shown,
        "images": selectors.study_images(study, shown["images"]),
        "progress": selectors.progress(rating.rater),
        "next_url": reverse("humaneval-rate", args=[slug, number, following.pk])
        if following and following.pk != rating.pk
        else "",
        "score_keys": SCORE_KEYS,
        "votes": VOTE_CHOICES,
        "chosen_vote": services.positional_of(rating.vote, rating.anchor_first) if rating.vote else "",
        "rubric": selectors.pointwise_rubric() if selectors.rates(study.mode) == "score" else "",
        "choices": choice_keys(shown.get("options") or {}),
    }
    return render(request, "humaneval/rate.html", context)


@role_required(ANNOTATOR)
def image(request, slug, number, pk):
    """An image of the study's release, for the study's raters and researchers."""
    benchmark, study = _study(request, slug, number)
    if not permissions.is_researcher(request.user) and selectors.rater_of(study, request.user) is None:
        raise Http404(gettext("Not a rater of this study."))
    found = selectors.study_image(study, pk)
    return FileResponse(default_storage.open(found.storage_name, "rb"))


@role_required(RESEARCHER)
def chart(request, slug, number, kind):
    """Judge-human agreement per task or per model, as bars (SVG)."""
    benchmark, study = _study(request, slug, number)
    permissions.require(selectors.figures_refusal(request.user, study))
    if kind not in ("task", "model"):
        raise Http404(gettext("Charts are per task or per model."))
    rows, name = selectors.chart_rows(study, services.current_figures(study), f"by_{kind}")
    return HttpResponse(card.score_chart(rows, (CHART_TITLES[kind] % {"name": name})), content_type="image/svg+xml")


@role_required(RESEARCHER)
def export(request, slug, number, kind):
    benchmark, study = _study(request, slug, number)
    permissions.require(selectors.figures_refusal(request.user, study))
    if kind not in exporting.FORMATS:
        raise Http404(gettext("Ratings export as jsonl or parquet."))
    name = f"{slugify(benchmark.slug)}-study-{study.number}-ratings"
    return exporting.streamed(study, kind, split=request.GET.get("split") in ("1", "true"), name=name)


@accepts_uploads("data_file")
@require_POST
@role_required(RESEARCHER)
def import_ratings(request, slug, number):
    benchmark, study = _study(request, slug, number)
    form = ImportForm(request.POST, request.FILES)
    if not form.is_valid():
        messages.error(request, gettext("Choose a ratings file (JSON Lines) to import."))
    else:
        try:
            count = services.import_ratings(study, form.cleaned_data["ratings"].read(), user=request.user)
            messages.success(request, ngettext("%(n)s rating imported.", "%(n)s ratings imported.", count) % {"n": count})
        except DomainError as exc:
            messages.error(request, exc.message)
    return redirect("humaneval-study", slug=slug, number=number)


@require_POST
@role_required(RESEARCHER)
def close(request, slug, number):
    benchmark, study = _study(request, slug, number)
    if not permissions.is_researcher(request.user):
        raise PermissionDenied(gettext("Closing a study needs the researcher role."))
    services.close_study(study, user=request.user)
    messages.success(request, gettext("Study %(number)s is closed.") % {"number": study.number})
    return redirect("humaneval-study", slug=slug, number=number)


@require_POST
@role_required(RESEARCHER)
def validation(request, slug, number):
    """Mark the study as the validation of its scores' judges (the leaderboard shows it), or unmark it."""
    benchmark, study = _study(request, slug, number)
    marked = request.POST.get("validates") == "1"
    try:
        services.mark_validation(study, user=request.user, validates=marked)
        said = (
            gettext("The leaderboard shows study %(number)s as its scores' validation.")
            if marked
            else gettext("Study %(number)s is no longer marked as its scores' validation.")
        )
        messages.success(request, said % {"number": study.number})
    except DomainError as exc:
        messages.error(request, exc.message)
    return redirect("humaneval-study", slug=slug, number=number)


@require_POST
@role_required(RESEARCHER)
def cite(request, slug, number):
    """Cite a closed study on the release's card page, or stop citing it."""
    benchmark, study = _study(request, slug, number)
    cited = request.POST.get("cite") == "1"
    try:
        services.cite_on_card(study, user=request.user, cite=cited)
        said = (
            gettext("Release %(version)s's card cites study %(number)s.")
            if cited
            else gettext("Release %(version)s's card no longer cites study %(number)s.")
        )
        messages.success(request, said % {"version": study.release.version, "number": study.number})
    except DomainError as exc:
        messages.error(request, exc.message)
    return redirect("humaneval-study", slug=slug, number=number)
