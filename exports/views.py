"""Release pages: the list and the form of a new release, a release (build, freeze, downloads),
its dataset card, and the diff with another release."""

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.files.storage import default_storage
from django.core.paginator import Paginator
from django.http import FileResponse, Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext, pgettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_POST

from annotation import withholding
from annotation.workflow import STATUS_CHOICES, STATUS_LABELS
from benchforge import permissions
from benchforge.inputs import accepts_uploads
from benchforge.markup import markdown_to_html
from benchforge.roles import ANNOTATOR, RESEARCHER, has_role, role_required
from curation.selectors import get_benchmark_for, task_choices

from . import card, leaderboard, selectors, services
from .models import Score

# What a release withholds, in the interface's language. annotation.withholding says it in English
# for the bundles (their dataset card stays English); these are the same words for the pages.
PART_LABELS = {
    "test_answers": _("answer keys of the test split"),
    "test_references": _("reference answers of the test split"),
    "test_criteria": _("per-sample criteria of the test split"),
    "reference_answers": _("reference answers of every split (dev too)"),
    "criteria": _("per-sample criteria of every split (dev too)"),
}
WITHHELD_FIELD_LABELS = {
    "answer": _("answer keys"),
    "reference_answer": _("reference answers"),
    "criteria": _("per-sample criteria"),
}
SPLIT_NAMES = {"dev": _("dev"), "test": _("test")}

# Pages of a release that stages above exports add (item analysis): (label, URL name taking the
# benchmark's slug and the version, the least role that sees the link, whether only a frozen release has it).
RELEASE_PAGES: list[tuple] = []


def register_release_page(label, url_name: str, *, role: str = RESEARCHER, frozen_only: bool = True) -> None:
    if all(page[1] != url_name for page in RELEASE_PAGES):
        RELEASE_PAGES.append((label, url_name, role, frozen_only))


def release_pages(user, release) -> list[tuple[str, str, str]]:
    """(label, url, URL name) of the pages stages add to this release that `user` may open."""
    return [
        (label, reverse(url_name, args=[release.benchmark.slug, release.version]), url_name)
        for label, url_name, role, frozen_only in RELEASE_PAGES
        if has_role(user, role) and (release.is_frozen or not frozen_only)
    ]


def _listed(labels) -> str:
    words = [str(label) for label in labels]
    if len(words) == 1:
        return words[0]
    return gettext("%(first)s and %(last)s") % {"first": pgettext("list separator", ", ").join(words[:-1]), "last": words[-1]}


def withheld_lines(private) -> list[str]:
    """What the public bundle withholds per split (withholding.statement, in the page's language)."""
    lines = []
    for split in withholding.SPLITS:
        hidden = withholding.fields_withheld(private, split)
        labels = [WITHHELD_FIELD_LABELS[f] for f in withholding.FIELDS if f in hidden]
        if labels:
            lines.append(
                gettext("Public bundle, %(split)s split: withholds %(fields)s (they are in the private bundle only).")
                % {"split": SPLIT_NAMES[split], "fields": _listed(labels)}
            )
        else:
            lines.append(
                gettext("Public bundle, %(split)s split: public in full (answer keys, reference answers and criteria included).")
                % {"split": SPLIT_NAMES[split]}
            )
    return lines


def published_lines(private) -> list[str]:
    """withholding.published_beyond_default, in the page's language."""
    out = []
    for split in withholding.SPLITS:
        default = withholding.fields_withheld(withholding.DEFAULT_PRIVATE, split)
        chosen = withholding.fields_withheld(private, split)
        shown = [WITHHELD_FIELD_LABELS[f] for f in withholding.FIELDS if f in default and f not in chosen]
        if shown:
            out.append(gettext("the %(split)s split's %(fields)s") % {"split": SPLIT_NAMES[split], "fields": _listed(shown)})
    return out


class ReleaseForm(forms.Form):
    version = forms.CharField(max_length=40, label=_("Version"), help_text=_("Semantic version, e.g. 1.0.0."))
    notes = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}), label=_("Notes"))
    statuses = forms.MultipleChoiceField(
        label=_("Item stages"),
        choices=STATUS_CHOICES,
        initial=services.DEFAULT_STATUSES,
        widget=forms.CheckboxSelectMultiple,
        help_text=_("Items in these stages go in."),
    )
    tasks = forms.MultipleChoiceField(required=False, label=_("Tasks"), help_text=_("None: every task."))
    dev_ratio = forms.FloatField(
        min_value=0,
        max_value=1,
        initial=0.4,
        label=_("Dev share"),
        help_text=_("0.4 gives the usual 4:6 dev/test split (by task; a seed and its rewrites stay together)."),
    )
    split_seed = forms.IntegerField(
        initial=0, min_value=0, max_value=2**31 - 1, label=_("Split seed"), help_text=_("The same seed gives the same split.")
    )
    private = forms.MultipleChoiceField(
        label=_("Withheld from the public bundle"),
        choices=[(name, PART_LABELS.get(name, label)) for name, label in withholding.CHOICES],
        initial=withholding.default_private,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text=_(
            "Ticked parts are in the private bundle only. The default withholds the test split's answer keys, "
            "reference answers and criteria, and publishes the dev split in full. Untick a test-split part and "
            "anyone who downloads the public bundle can read it (a reference answer such as 'Magenta (A)' gives "
            "a multiple-choice key away too), and test scores can then be computed, or tuned for, outside the "
            "leaderboard."
        ),
    )
    license = forms.CharField(max_length=200, initial="CC BY-NC-SA 4.0", label=_("License"))

    def __init__(self, *args, benchmark, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["tasks"].choices = task_choices(benchmark, value="pk")


def _release(request, slug, version) -> tuple:
    benchmark = get_benchmark_for(request.user, slug)
    return benchmark, selectors.get_release(benchmark, version)


@role_required(ANNOTATOR)
def release_list(request, slug):
    benchmark = get_benchmark_for(request.user, slug)
    form = ReleaseForm(request.POST or None, benchmark=benchmark) if permissions.is_researcher(request.user) else None
    if request.method == "POST":
        if form is None:
            raise PermissionDenied(gettext("Building a release needs the researcher role."))
        if form.is_valid():
            data = form.cleaned_data
            release, created = services.submit_release(
                benchmark,
                user=request.user,
                version=data["version"].strip(),
                notes=data["notes"],
                statuses=data["statuses"],
                tasks=[int(t) for t in data["tasks"]],
                dev_ratio=data["dev_ratio"],
                split_seed=data["split_seed"],
                private=data["private"],
                license=data["license"],
            )
            if created:
                messages.success(request, gettext("Release %(version)s is being built.") % {"version": release.version})
                published = published_lines(release.private)
                if published:
                    messages.warning(
                        request,
                        gettext("Release %(version)s publishes more than the default: its public bundle carries %(parts)s.")
                        % {"version": release.version, "parts": pgettext("list of clauses separator", "; ").join(published)},
                    )
            return redirect("release-detail", slug=slug, version=release.version)
    releases = selectors.release_rows(benchmark)
    return render(request, "exports/list.html", {"benchmark": benchmark, "releases": releases, "form": form})


@role_required(ANNOTATOR)
def release_detail(request, slug, version):
    benchmark, release = _release(request, slug, version)
    files = selectors.files_for(request.user, release)
    others = selectors.built_releases_besides(release)
    context = {
        "benchmark": benchmark,
        "release": release,
        "state": selectors.release_state(release),
        "files": files,
        "others": others,
        # What the release took and withholds, in words.
        "stage_labels": [STATUS_LABELS.get(s, s).lower() for s in release.statuses],
        "withheld": withheld_lines(release.private),
        "published": published_lines(release.private),
        "pages": release_pages(request.user, release),
    }
    return render(request, "exports/detail.html", context)


@role_required(RESEARCHER)
@require_POST
def release_build(request, slug, version):
    _benchmark, release = _release(request, slug, version)
    before = release.job_id
    release = services.start_build(release, user=request.user)
    if release.job_id == before and release.status == release.Status.BUILDING:
        messages.info(
            request,
            gettext("Release %(version)s is already being built (job #%(job)s).")
            % {"version": release.version, "job": release.job_id},
        )
    else:
        messages.success(request, gettext("Release %(version)s is being built again.") % {"version": release.version})
    return redirect("release-detail", slug=slug, version=version)


@role_required(RESEARCHER)
@require_POST
def release_freeze(request, slug, version):
    _benchmark, release = _release(request, slug, version)
    services.freeze(release, user=request.user)
    messages.success(request, gettext("Release %(version)s is frozen: it will never change.") % {"version": release.version})
    return redirect("release-detail", slug=slug, version=version)


@role_required(ANNOTATOR)
def release_download(request, slug, version, kind):
    _benchmark, release = _release(request, slug, version)
    found = selectors.get_file(release, kind)
    if found.is_private and not permissions.is_researcher(request.user):
        raise PermissionDenied(gettext("The private bundle (with everything the public one withholds) is for researchers."))
    response = FileResponse(
        default_storage.open(found.storage_name, "rb"), as_attachment=True, filename=found.storage_name.rsplit("/", 1)[-1]
    )
    response["X-Content-SHA256"] = found.sha256
    return response


@role_required(ANNOTATOR)
def release_card(request, slug, version):
    benchmark, release = _release(request, slug, version)
    if release.built_at is None:
        raise Http404(gettext("Release %(version)s is not built yet: it has no dataset card.") % {"version": version})
    # The card as the public bundle's README.md says it, rendered and sanitised; the chart it
    # names inside the bundle is served by the chart view.
    chart = reverse("release-chart", args=[slug, release.version])
    html = markdown_to_html(card.dataset_card(release, "public"), links={"charts/items_per_task.svg": chart})
    # cited after the freeze: beside the bundle's README, not in it
    citations = list(_study_links_for(request.user, dict(enumerate(leaderboard.card_citations(release)))).values())
    return render(
        request, "exports/card.html", {"benchmark": benchmark, "release": release, "card": html, "citations": citations}
    )


@role_required(ANNOTATOR)
def release_chart(request, slug, version):
    _benchmark, release = _release(request, slug, version)
    return HttpResponse(card.task_chart(release.counts, release.taxonomy), content_type="image/svg+xml")


DIFF_PARTS = {"changed": _("Changed"), "added": _("Added"), "removed": _("Removed")}
DIFF_PAGE_SIZE = 20


@role_required(ANNOTATOR)
def release_diff(request, slug, version):
    """What changed from another release: the changed, added and removed items (one part at a
    time, paginated), each with its question, task and a link to the item, and for a changed
    item every field that changed, old and new. Private parts stay hidden from non-researchers."""
    benchmark, release = _release(request, slug, version)
    against = request.GET.get("against") or (release.source.version if release.source_id else "")
    other = selectors.find_release(benchmark, against)
    if other is None:
        raise Http404(gettext("Choose a release to compare with (?against=VERSION)."))
    can_see_private = permissions.is_researcher(request.user)
    found = services.compare(other, release, hide=() if can_see_private else release.private)
    show = request.GET.get("show")
    if show not in DIFF_PARTS:
        show = next((part for part in DIFF_PARTS if found[part]), "changed")
    page = Paginator(found[show], DIFF_PAGE_SIZE).get_page(request.GET.get("page"))
    context = {
        "benchmark": benchmark,
        "release": release,
        "other": other,
        "parts": [(part, label, len(found[part])) for part, label in DIFF_PARTS.items()],
        "show": show,
        "page": page,
        "entries": [selectors.diff_entry(e) for e in page],
        "item_url": reverse("item-edit", args=[slug, 0]).removesuffix("0/"),
    }
    return render(request, "exports/diff.html", context)


class ScoreForm(forms.Form):
    label = forms.CharField(max_length=100, label=_("Label"), help_text=_("The model's name on the leaderboard."))
    method = forms.ChoiceField(choices=Score.Method.choices, label=_("Method"))
    predictions = forms.FileField(
        required=False,
        label=_("Predictions"),
        help_text=_('JSON Lines of {"id": …, "answer": "…"} for the open questions (or ask an endpoint).'),
    )
    endpoint = forms.CharField(
        required=False, max_length=100, label=_("Endpoint"), help_text=_("The model's endpoint in the models file.")
    )
    judge = forms.CharField(
        required=False,
        max_length=100,
        label=_("Judge"),
        help_text=_("Judge endpoint (pointwise and pairwise); for mcq, optional: the LLM choice extractor."),
    )
    anchor = forms.ModelChoiceField(
        queryset=Score.objects.none(), required=False, label=_("Anchor"), help_text=_("Pairwise: the anchor model.")
    )

    def __init__(self, *args, release, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["anchor"].queryset = selectors.anchor_choices(release)
        self.fields["anchor"].label_from_instance = lambda s: f"{s.label} ({s.get_method_display()})"


@role_required(ANNOTATOR)
@accepts_uploads("data_file")
def release_leaderboard(request, slug, version):
    benchmark, release = _release(request, slug, version)
    can_score = permissions.is_researcher(request.user) and release.is_frozen
    form = ScoreForm(request.POST or None, request.FILES or None, release=release) if can_score else None
    if request.method == "POST":
        if form is None:
            raise PermissionDenied(gettext("Scoring a model needs the researcher role and a frozen release."))
        if form.is_valid():
            score = leaderboard.submit(release, user=request.user, **form.cleaned_data)
            messages.success(request, gettext("%(label)s is being scored.") % {"label": score.label})
            return redirect("release-score", slug=slug, version=version, pk=score.pk)
    validated = _study_links_for(request.user, leaderboard.validations(release))
    # the page shows headlines, never a score's answer set (thousands of answers per model)
    shown = selectors.scores_of(release).defer("answers", "anchor__answers", "anchor__results", "scored_with")
    scores = [(s, _headline(s), validated.get(s.pk)) for s in shown]
    context = {"benchmark": benchmark, "release": release, "scores": scores, "form": form}
    return render(request, "exports/leaderboard.html", context)


def _study_links_for(user, found: dict) -> dict:
    """Study pages open to researchers (and the study's raters): for anyone else a study is named, not
    linked, so no link leads to a page they may not see."""
    if permissions.is_researcher(user):
        return found
    return {key: entry if user.pk in entry.get("rater_ids", ()) else {**entry, "url": ""} for key, entry in found.items()}


def _headline(score) -> str:
    """The leaderboard's number; the pairwise one reads "win 55.0%" (the harness's words), said here in the page's language."""
    text = leaderboard.headline(score.method, score.results)
    return gettext("win %(value)s") % {"value": text.removeprefix("win ")} if text.startswith("win ") else text


@role_required(ANNOTATOR)
def release_score(request, slug, version, pk: int):
    benchmark, release = _release(request, slug, version)
    score = selectors.get_score(release, pk)
    rows = leaderboard.per_group(score.method, score.results)
    context = {
        "benchmark": benchmark,
        "release": release,
        "score": score,
        "headline": _headline(score),
        "rows": rows,
        # What reproduces the number from the private bundle (researchers: the bundle is theirs).
        "reproduce": leaderboard.reproduce_commands(score) if permissions.is_researcher(request.user) else [],
        "predictions_name": leaderboard.predictions_file_name(score),
        "spending": leaderboard.spending(score),
    }
    return render(request, "exports/score.html", context)


@role_required(RESEARCHER)
def release_score_predictions(request, slug, version, pk: int):
    """The answers a score judged, in the harness's predictions format (for reproducing it)."""
    _benchmark, release = _release(request, slug, version)
    score = selectors.get_score(release, pk)
    response = HttpResponse(leaderboard.predictions_jsonl(score), content_type="application/jsonl; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{leaderboard.predictions_file_name(score)}"'
    return response


@role_required(ANNOTATOR)
def release_score_chart(request, slug, version, pk: int):
    _benchmark, release = _release(request, slug, version)
    score = selectors.get_score(release, pk)
    rows = leaderboard.per_group(score.method, score.results)
    return HttpResponse(card.score_chart(rows, f"{score.label}: {score.get_method_display()}"), content_type="image/svg+xml")
