"""Release pages: the list and the form of a new release, a release (build, freeze, downloads),
its dataset card, and the diff with another release."""

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.files.storage import default_storage
from django.http import FileResponse, Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from annotation.workflow import STATUS_CHOICES
from benchforge import permissions
from benchforge.inputs import accepts_uploads
from benchforge.roles import ANNOTATOR, RESEARCHER, role_required
from curation.selectors import get_benchmark_for

from . import card, leaderboard, services
from .models import PRIVATE_PARTS, Release, Score


class ReleaseForm(forms.Form):
    version = forms.CharField(max_length=40, help_text="Semantic version, e.g. 1.0.0.")
    notes = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    statuses = forms.MultipleChoiceField(
        choices=STATUS_CHOICES,
        initial=services.DEFAULT_STATUSES,
        widget=forms.CheckboxSelectMultiple,
        help_text="Items in these stages go in.",
    )
    tasks = forms.MultipleChoiceField(required=False, help_text="None: every task.")
    dev_ratio = forms.FloatField(
        min_value=0,
        max_value=1,
        initial=0.4,
        label="Dev share",
        help_text="0.4 gives the usual 4:6 dev/test split (by task; a seed and its rewrites stay together).",
    )
    split_seed = forms.IntegerField(initial=0, min_value=0, max_value=2**31 - 1, help_text="The same seed gives the same split.")
    private = forms.MultipleChoiceField(
        choices=list(PRIVATE_PARTS.items()),
        initial=["test_answers"],
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="What the public bundle withholds.",
    )
    license = forms.CharField(max_length=200, initial="CC BY-NC-SA 4.0")

    def __init__(self, *args, benchmark, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["tasks"].choices = list(benchmark.tasks.order_by("order", "name").values_list("pk", "name"))


def _release(request, slug, version) -> tuple:
    benchmark = get_benchmark_for(request.user, slug)
    release = Release.objects.filter(benchmark=benchmark, version=version).select_related("job", "source").first()
    if release is None:
        raise Http404(f"No release {version} of this benchmark.")
    return benchmark, release


@role_required(ANNOTATOR)
def release_list(request, slug):
    benchmark = get_benchmark_for(request.user, slug)
    form = ReleaseForm(request.POST or None, benchmark=benchmark) if permissions.is_researcher(request.user) else None
    if request.method == "POST":
        if form is None:
            raise PermissionDenied("Building a release needs the researcher role.")
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
                messages.success(request, f"Release {release.version} is being built.")
            return redirect("release-detail", slug=slug, version=release.version)
    releases = Release.objects.filter(benchmark=benchmark).order_by("-created_at")
    return render(request, "exports/list.html", {"benchmark": benchmark, "releases": releases, "form": form})


@role_required(ANNOTATOR)
def release_detail(request, slug, version):
    benchmark, release = _release(request, slug, version)
    files = [f for f in release.files.all() if not f.is_private or permissions.is_researcher(request.user)]
    others = Release.objects.filter(benchmark=benchmark).exclude(pk=release.pk).exclude(built_at=None).order_by("-created_at")
    return render(request, "exports/detail.html", {"benchmark": benchmark, "release": release, "files": files, "others": others})


@role_required(RESEARCHER)
@require_POST
def release_build(request, slug, version):
    _benchmark, release = _release(request, slug, version)
    before = release.job_id
    release = services.start_build(release, user=request.user)
    if release.job_id == before and release.status == release.Status.BUILDING:
        messages.info(request, f"Release {release.version} is already being built (job #{release.job_id}).")
    else:
        messages.success(request, f"Release {release.version} is being built again.")
    return redirect("release-detail", slug=slug, version=version)


@role_required(RESEARCHER)
@require_POST
def release_freeze(request, slug, version):
    _benchmark, release = _release(request, slug, version)
    services.freeze(release, user=request.user)
    messages.success(request, f"Release {release.version} is frozen: it will never change.")
    return redirect("release-detail", slug=slug, version=version)


@role_required(ANNOTATOR)
def release_download(request, slug, version, kind):
    _benchmark, release = _release(request, slug, version)
    found = release.files.filter(kind=kind).first()
    if found is None:
        raise Http404(f"Release {version} has no {kind} file (yet).")
    if found.is_private and not permissions.is_researcher(request.user):
        raise PermissionDenied("The private bundle (with everything the public one withholds) is for researchers.")
    response = FileResponse(
        default_storage.open(found.storage_name, "rb"), as_attachment=True, filename=found.storage_name.rsplit("/", 1)[-1]
    )
    response["X-Content-SHA256"] = found.sha256
    return response


@role_required(ANNOTATOR)
def release_card(request, slug, version):
    benchmark, release = _release(request, slug, version)
    if release.built_at is None:
        raise Http404(f"Release {version} is not built yet: it has no dataset card.")
    return render(
        request, "exports/card.html", {"benchmark": benchmark, "release": release, "card": card.dataset_card(release, "public")}
    )


@role_required(ANNOTATOR)
def release_chart(request, slug, version):
    _benchmark, release = _release(request, slug, version)
    return HttpResponse(card.task_chart(release.counts), content_type="image/svg+xml")


@role_required(ANNOTATOR)
def release_diff(request, slug, version):
    benchmark, release = _release(request, slug, version)
    against = request.GET.get("against") or (release.source.version if release.source_id else "")
    other = Release.objects.filter(benchmark=benchmark, version=against).first()
    if other is None:
        raise Http404("Choose a release to compare with (?against=VERSION).")
    can_see_private = permissions.is_researcher(request.user)
    result = services.diff(other, release, hide=() if can_see_private else release.private)
    return render(request, "exports/diff.html", {"benchmark": benchmark, "release": release, "other": other, "diff": result})


class ScoreForm(forms.Form):
    label = forms.CharField(max_length=100, help_text="The model's name on the leaderboard.")
    method = forms.ChoiceField(choices=Score.Method.choices)
    predictions = forms.FileField(
        required=False, help_text='JSON Lines of {"id": …, "answer": "…"} for the open questions (or ask an endpoint).'
    )
    endpoint = forms.CharField(required=False, max_length=100, help_text="The model's endpoint in the models file.")
    judge = forms.CharField(required=False, max_length=100, help_text="Judge endpoint (pointwise and pairwise).")
    anchor = forms.ModelChoiceField(queryset=Score.objects.none(), required=False, help_text="Pairwise: the anchor model.")

    def __init__(self, *args, release, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["anchor"].queryset = release.scores.exclude(answers={})


@role_required(ANNOTATOR)
@accepts_uploads("data_file")
def release_leaderboard(request, slug, version):
    benchmark, release = _release(request, slug, version)
    can_score = permissions.is_researcher(request.user) and release.is_frozen
    form = ScoreForm(request.POST or None, request.FILES or None, release=release) if can_score else None
    if request.method == "POST":
        if form is None:
            raise PermissionDenied("Scoring a model needs the researcher role and a frozen release.")
        if form.is_valid():
            data = form.cleaned_data
            upload = data["predictions"]
            score = leaderboard.submit(
                release,
                user=request.user,
                label=data["label"],
                method=data["method"],
                predictions=upload.read() if upload else None,
                endpoint=data["endpoint"].strip(),
                judge=data["judge"].strip(),
                anchor=data["anchor"],
            )
            messages.success(request, f"{score.label} is being scored.")
            return redirect("release-score", slug=slug, version=version, pk=score.pk)
    scores = [
        (s, leaderboard.headline(s.method, s.results))
        for s in release.scores.select_related("job").order_by("method", "-created_at")
    ]
    context = {"benchmark": benchmark, "release": release, "scores": scores, "form": form}
    return render(request, "exports/leaderboard.html", context)


@role_required(ANNOTATOR)
def release_score(request, slug, version, pk: int):
    benchmark, release = _release(request, slug, version)
    score = release.scores.select_related("job", "anchor", "created_by").filter(pk=pk).first()
    if score is None:
        raise Http404(f"No score #{pk} on release {version}.")
    rows = leaderboard.per_group(score.method, score.results)
    context = {
        "benchmark": benchmark,
        "release": release,
        "score": score,
        "headline": leaderboard.headline(score.method, score.results),
        "rows": rows,
    }
    return render(request, "exports/score.html", context)


@role_required(ANNOTATOR)
def release_score_chart(request, slug, version, pk: int):
    _benchmark, release = _release(request, slug, version)
    score = release.scores.filter(pk=pk).first()
    if score is None:
        raise Http404(f"No score #{pk} on release {version}.")
    rows = leaderboard.per_group(score.method, score.results)
    return HttpResponse(card.score_chart(rows, f"{score.label}: {score.get_method_display()}"), content_type="image/svg+xml")
