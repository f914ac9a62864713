from django.conf import settings
from django.contrib import messages
from django.core.files.storage import default_storage
from django.core.paginator import Paginator
from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext, pgettext
from django.views.decorators.http import require_GET, require_POST

from benchforge.errors import DomainError
from benchforge.inputs import accepts_uploads, is_digits
from benchforge.roles import ANNOTATOR, RESEARCHER, role_required

from . import services
from .content import STORED_NAME
from .forms import (
    BenchmarkCreateForm,
    BenchmarkSettingsForm,
    ImportForm,
    KnownSetForm,
    PresetForm,
    TaskForm,
)
from .imaging import hamming
from .models import Image, KnownImageSet
from .presets import PRESETS
from .selectors import (
    IMAGE_FLAGS,
    benchmarks_for,
    contamination_report,
    get_benchmark_for,
    get_image_for,
    images_of,
    known_sets,
    media_file_visible_to,
    near_duplicate_queue,
    recent_imports,
    status_counts,
    task_choices,
    task_collection_progress,
    taxonomy_tree,
)


@role_required(ANNOTATOR)
def taxonomy(request, slug):
    benchmark = get_benchmark_for(request.user, slug)
    return render(
        request,
        "curation/taxonomy.html",
        {
            "benchmark": benchmark,
            "tree": taxonomy_tree(benchmark),
            "preset_form": PresetForm(),
        },
    )


@role_required(RESEARCHER)
def task_edit(request, slug, task_slug):
    benchmark = get_benchmark_for(request.user, slug)
    task = get_object_or_404(benchmark.tasks, slug=task_slug)
    form = TaskForm(request.POST or None, instance=task)
    if request.method == "POST" and form.is_valid():
        services.update_task(task, **{f: form.cleaned_data[f] for f in form.Meta.fields})
        messages.success(request, gettext("Saved task '%(name)s'.") % {"name": task.display_name})
        return redirect("taxonomy", slug=benchmark.slug)
    return render(request, "curation/task_form.html", {"benchmark": benchmark, "task": task, "form": form})


@role_required(RESEARCHER)
def benchmark_create(request):
    form = BenchmarkCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        benchmark = services.create_benchmark(
            name=data["name"],
            slug=data["slug"],
            description=data["description"],
            user=request.user,
            language=data["language"] or services.preset_language(data["preset"]),
        )
        if data["preset"]:
            services.start_preset_load(benchmark, data["preset"], user=request.user)
            messages.success(
                request,
                gettext("Created '%(name)s'; its %(preset)s taxonomy is loading.")
                % {"name": benchmark.name, "preset": PRESETS[data["preset"]].name},
            )
        else:
            messages.success(request, gettext("Created '%(name)s'.") % {"name": benchmark.name})
        return redirect("dashboard", slug=benchmark.slug)
    return render(request, "curation/benchmark_form.html", {"form": form})


@role_required(RESEARCHER)
@require_POST
def preset_load(request, slug):
    benchmark = get_benchmark_for(request.user, slug)
    form = PresetForm(request.POST)
    if not form.is_valid():
        messages.error(request, gettext("Choose one of the listed presets."))
    else:
        services.start_preset_load(benchmark, form.cleaned_data["preset"], user=request.user)
        messages.success(request, gettext("Preset tasks added (existing tasks were kept as they were)."))
    return redirect("taxonomy", slug=benchmark.slug)


@role_required(RESEARCHER)
def benchmark_settings(request, slug):
    benchmark = get_benchmark_for(request.user, slug)
    form = BenchmarkSettingsForm(request.POST or None, instance=benchmark)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, gettext("Settings saved."))
        return redirect("dashboard", slug=benchmark.slug)
    return render(request, "curation/benchmark_settings.html", {"benchmark": benchmark, "form": form})


# ---- images: screening grid, uploads and imports, near duplicates, contamination -------------------

SCREEN_PAGE_SIZE = 48
# Digit keys of the screening grid, in the protocol's order (docs/methods.md section 1).
REASON_KEYS = [(str(n), value, label) for n, (value, label) in enumerate(Image.RejectReason.choices, 1)]


def _grid_filters(request) -> dict:
    flag = request.GET.get("flag", "")
    status = request.GET.get("status", "")
    return {
        "status": status if status in Image.Status.values else "",
        "task": request.GET.get("task", ""),
        "flag": flag if flag in IMAGE_FLAGS else "",
    }


@role_required(ANNOTATOR)
def image_grid(request, slug):
    """The screening grid: thumbnails, filters, per-task progress; the keyboard actions call
    the screening API (curation/static/curation/screening.js)."""
    benchmark = get_benchmark_for(request.user, slug)
    filters = _grid_filters(request)
    page = Paginator(images_of(benchmark, **filters), SCREEN_PAGE_SIZE).get_page(request.GET.get("page"))
    counts = status_counts(benchmark)
    progress = task_collection_progress(benchmark)
    return render(
        request,
        "curation/images.html",
        {
            "benchmark": benchmark,
            "page": page,
            "filters": filters,
            "tab": "screen",
            "flags": [(key, label) for key, (label, _) in IMAGE_FLAGS.items()],
            "statuses": [(value, label, counts[value]) for value, label in Image.Status.choices],
            "status_labels": dict(Image.Status.choices),
            "words": {
                "selected": gettext("%(n)s selected: actions apply to all of them."),
                "nothing_selected": gettext("Nothing selected: actions apply to the focused image."),
                "focus_first": gettext("Focus or select an image first (arrow keys or click)."),
                "unreachable": gettext("The server could not be reached; nothing was saved. Try again."),
                "failed": gettext("The action failed (HTTP %(status)s)."),
                "accepted": gettext("Accepted"),
                "reset": gettext("Back to pending:"),
                "rejected": gettext("Rejected"),
            },
            "total": sum(counts.values()),
            "task_groups": task_choices(benchmark),
            "reasons": REASON_KEYS,
            "progress": progress,
            "accepted_total": counts[Image.Status.ACCEPTED],  # each image once, whatever its tasks
            "quota_total": sum(row["quota"] for row in progress),
        },
    )


@role_required(ANNOTATOR)
@require_GET
def image_progress(request, slug):
    """The per-task progress table alone, redrawn by the grid after each screening action."""
    benchmark = get_benchmark_for(request.user, slug)
    return render(
        request, "curation/_task_progress.html", {"benchmark": benchmark, "progress": task_collection_progress(benchmark)}
    )


@role_required(ANNOTATOR)
@require_GET
def image_upload(request, slug):
    """Drag-and-drop upload (the page posts batches to the image API) and, for researchers,
    the zip / URL-list import form with the progress of recent imports."""
    benchmark = get_benchmark_for(request.user, slug)
    return render(
        request,
        "curation/images_upload.html",
        {
            "benchmark": benchmark,
            "task_groups": task_choices(benchmark),
            "import_form": ImportForm(benchmark=benchmark),
            "jobs": recent_imports(benchmark),
            "max_mb": settings.BENCHFORGE_MAX_UPLOAD_BYTES // 1_000_000,
            # what upload.js writes, in the page's language
            "words": {
                "totals": gettext("%(added)s added, %(duplicate)s already stored, %(error)s refused"),
                "still_uploading": gettext("%(n)s uploading…"),
                "uploading": gettext("uploading…"),
                "image": gettext("image #%(id)s:"),
                "unreachable": gettext("The upload did not reach the server; try these files again."),
                "failed": gettext("Upload failed (HTTP %(status)s)."),
                "outcomes": {
                    "added": pgettext("upload outcome", "added"),
                    "duplicate": pgettext("upload outcome", "duplicate"),
                    "error": pgettext("upload outcome", "error"),
                },
            },
        },
    )


def _field_name(form, field: str) -> str:
    return str(form.fields[field].label).lower() if field in form.fields else gettext("form")


@accepts_uploads("archive")
@role_required(RESEARCHER)
@require_POST
def image_import(request, slug):
    benchmark = get_benchmark_for(request.user, slug)
    form = ImportForm(request.POST, request.FILES, benchmark=benchmark)
    if not form.is_valid():
        messages.error(
            request,
            gettext("Import not started: %(problems)s")
            % {"problems": "; ".join(f"{_field_name(form, field)}: {' '.join(errs)}" for field, errs in form.errors.items())},
        )
        return redirect("image-upload", slug=benchmark.slug)
    data = form.cleaned_data
    try:
        job = services.start_upload_import(
            benchmark,
            user=request.user,
            kind=data["kind"],
            file=data["file"],
            tasks=list(data["tasks"]),
            source=data["source"],
            license=data["license"],
        )
    except DomainError as exc:
        messages.error(request, gettext("Import not started: %(problems)s") % {"problems": exc.message})
        return redirect("image-upload", slug=benchmark.slug)
    messages.success(
        request,
        gettext("Import job #%(id)s started; its progress is below and each file's outcome is on the job page.") % {"id": job.pk},
    )
    return redirect(reverse("image-upload", args=[benchmark.slug]) + "#imports")


@role_required(ANNOTATOR)
@require_GET
def near_duplicates(request, slug):
    benchmark = get_benchmark_for(request.user, slug)
    page = Paginator(near_duplicate_queue(benchmark), 20).get_page(request.GET.get("page"))
    pairs = [
        {
            "image": image,
            "other": image.near_duplicate_of,
            "phash_distance": hamming(image.phash, image.near_duplicate_of.phash),
            "dhash_distance": hamming(image.dhash, image.near_duplicate_of.dhash),
        }
        for image in page
    ]
    return render(request, "curation/images_neardup.html", {"benchmark": benchmark, "page": page, "pairs": pairs})


@role_required(ANNOTATOR)
@require_POST
def near_duplicate_resolve(request, slug, pk):
    """Keep both images of a pair, or drop this one as similar content."""
    image = get_image_for(request.user, slug, pk)
    decision = request.POST.get("decision")
    if decision not in ("keep", "drop"):
        raise DomainError(gettext("Choose 'keep' (both images stay) or 'drop' (reject this one as similar content)."))
    services.resolve_near_duplicate(image, keep=decision == "keep", user=request.user)
    done = gettext("Image #%(id)s kept.") if decision == "keep" else gettext("Image #%(id)s rejected as similar content.")
    messages.success(request, done % {"id": image.pk})
    page = request.POST.get("page", "")
    return redirect(reverse("near-duplicates", args=[slug]) + (f"?page={page}" if is_digits(page) else ""))


@role_required(ANNOTATOR)
@require_GET
def contamination(request, slug):
    benchmark = get_benchmark_for(request.user, slug)
    page = Paginator(contamination_report(benchmark), 50).get_page(request.GET.get("page"))
    return render(request, "curation/images_contamination.html", {"benchmark": benchmark, "page": page})


def _opened_from(request):
    """Known sets belong to no benchmark: `?from=<slug>` (or a posted `from`) names the benchmark
    the page was opened from, so its navigation stays (only a benchmark the user may see)."""
    slug = request.POST.get("from") or request.GET.get("from") or ""
    return benchmarks_for(request.user).filter(slug=slug).first() if slug else None


def _known_sets_url(benchmark) -> str:
    url = reverse("known-sets")
    return f"{url}?from={benchmark.slug}" if benchmark else url


@accepts_uploads("data_file")
@role_required(RESEARCHER)
def known_sets_page(request):
    benchmark = _opened_from(request)
    form = KnownSetForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            rows = services.parse_hash_list(data["file"].read(), data["file"].name)
            result = services.import_known_set(
                name=data["name"], kind=data["kind"], rows=rows, description=data["description"], user=request.user
            )
        except DomainError as exc:
            form.add_error("file", exc.message)
        else:
            messages.success(
                request,
                gettext(
                    "'%(name)s': %(added)s hashes added (%(known)s were already in the set); "
                    "%(flagged)s stored images newly flagged."
                )
                % {
                    "name": result.known_set.name,
                    "added": result.hashes_added,
                    "known": len(rows) - result.hashes_added,
                    "flagged": result.images_flagged,
                },
            )
            return redirect(_known_sets_url(benchmark))
    page = Paginator(known_sets(), 50).get_page(request.GET.get("page"))
    return render(request, "curation/known_sets.html", {"form": form, "page": page, "benchmark": benchmark})


@role_required(RESEARCHER)
@require_POST
def known_set_delete(request, pk):
    known_set = get_object_or_404(KnownImageSet, pk=pk)
    services.delete_known_set(known_set)
    messages.success(
        request,
        gettext("Deleted '%(name)s'; images only it had flagged are no longer marked contaminated.") % {"name": known_set.name},
    )
    return redirect(_known_sets_url(_opened_from(request)))


# ---- media: stored images and thumbnails, only for those who may see them ------------------------


@role_required(ANNOTATOR)
@require_GET
def media_file(request, path):
    match = STORED_NAME.fullmatch(path)  # nothing else (archives under imports/, a path with "..") is served
    if match is None or not media_file_visible_to(request.user, path, match[3]):
        raise Http404(gettext("No such file, or it belongs to no benchmark you can see."))
    try:
        handle = default_storage.open(path)
    except FileNotFoundError:
        raise Http404(gettext("The file is missing from storage.")) from None
    response = FileResponse(handle)
    # Content-addressed: the bytes behind a name never change, so browsers may keep them.
    response["Cache-Control"] = "private, max-age=31536000, immutable"
    return response
