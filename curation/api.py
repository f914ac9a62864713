from django.http import QueryDict
from django.urls import path
from rest_framework import generics, status
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.response import Response

from benchforge import permissions
from benchforge.inputs import accepts_uploads, refused_uploads
from benchforge.navigation import changes_work_only
from benchforge.roles import ANNOTATOR, RESEARCHER, role_permission

from . import services
from .models import Image
from .selectors import (
    IMAGE_FLAGS,
    benchmarks_for,
    get_benchmark_for,
    get_image_for,
    images_of,
    known_sets,
    status_counts,
)
from .serializers import (
    BenchmarkSerializer,
    ImageSerializer,
    ImageUploadSerializer,
    ImportSerializer,
    KnownSetImportSerializer,
    KnownSetSerializer,
    ScreenSerializer,
    TaskSerializer,
)


class BenchmarkList(generics.ListCreateAPIView):
    """Benchmarks you are a member of (all of them for researchers). POST (researcher) creates one, optionally from a preset."""

    serializer_class = BenchmarkSerializer
    permission_classes = [role_permission(ANNOTATOR)]

    def get_queryset(self):
        return benchmarks_for(self.request.user).prefetch_related("categories__parent", "tasks__category")

    def create(self, request, *args, **kwargs):
        permissions.require_researcher(request.user, "Creating a benchmark")
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        benchmark = services.create_benchmark(
            name=data["name"],
            slug=data.get("slug", ""),
            description=data.get("description", ""),
            user=request.user,
            preset=data.get("preset", ""),
            language=data.get("language", ""),
        )
        return Response(self.get_serializer(benchmark).data, status=status.HTTP_201_CREATED)


class BenchmarkDetail(generics.RetrieveAPIView):
    serializer_class = BenchmarkSerializer
    permission_classes = [role_permission(ANNOTATOR)]
    lookup_field = "slug"

    def get_object(self):
        return get_benchmark_for(self.request.user, self.kwargs["slug"])


class TaskDetail(generics.RetrieveUpdateAPIView):
    """Read a task; PATCH (researcher) edits its description, keywords, guideline, judge rules or quota."""

    serializer_class = TaskSerializer
    permission_classes = [role_permission(ANNOTATOR)]
    http_method_names = ["get", "patch", "head", "options"]

    def get_object(self):
        benchmark = get_benchmark_for(self.request.user, self.kwargs["slug"])
        return generics.get_object_or_404(benchmark.tasks.select_related("category"), slug=self.kwargs["task_slug"])

    def partial_update(self, request, *args, **kwargs):
        permissions.require_researcher(request.user, "Editing the taxonomy")
        task = self.get_object()
        serializer = self.get_serializer(task, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        services.update_task(task, **serializer.validated_data)
        return Response(self.get_serializer(task).data)


urlpatterns = [
    path("benchmarks/", BenchmarkList.as_view(), name="api-benchmarks"),
    path("benchmarks/<slug:slug>/", BenchmarkDetail.as_view(), name="api-benchmark-detail"),
    path("benchmarks/<slug:slug>/tasks/<slug:task_slug>/", TaskDetail.as_view(), name="api-task-detail"),
]


# ---- images --------------------------------------------------------------------------------------


@accepts_uploads("images")
class ImageListUpload(generics.ListAPIView):
    """Images of a benchmark, filtered by `status` (pending, accepted, rejected), `task` (slug) and
    `flag` (low_resolution, near_duplicate, contaminated, animated, untagged).

    POST multipart `files` (one or many) with optional `tasks` (slugs), `source`, `license` to
    upload: every file gets its own result (added, duplicate or error with the reason), so one bad
    file never stops the others. 201 when at least one image was added, else 200."""

    serializer_class = ImageSerializer
    permission_classes = [role_permission(ANNOTATOR)]
    parser_classes = [MultiPartParser, FormParser]

    def get_queryset(self):
        benchmark = get_benchmark_for(self.request.user, self.kwargs["slug"])
        params = self.request.query_params
        flag, state, task = params.get("flag", ""), params.get("status", ""), params.get("task", "")
        if flag and flag not in IMAGE_FLAGS:
            raise ValidationError({"flag": f"Unknown flag '{flag}'; use one of {', '.join(IMAGE_FLAGS)}."})
        if state and state not in Image.Status.values:
            raise ValidationError({"status": f"Unknown status '{state}'; use one of {', '.join(Image.Status.values)}."})
        if task and not benchmark.tasks.filter(slug=task).exists():
            raise ValidationError({"task": f"No task '{task}' in this benchmark."})
        return (
            images_of(benchmark, status=state, task=task, flag=flag)
            .select_related("collected_by")
            .prefetch_related("contamination_matches__known_set")
        )

    def post(self, request, slug):
        benchmark = get_benchmark_for(request.user, slug)
        refused = refused_uploads(request)
        files = request.FILES.getlist("files") or request.FILES.getlist("file")
        if refused and not files:  # every file was over the limit: say so for each
            return Response({"results": [{"name": r.name, "outcome": "error", "message": r.message} for r in refused]})
        # A request with no body (or not a form) parses to a plain dict: read it as an empty form.
        form = request.data if isinstance(request.data, QueryDict) else QueryDict()
        data = {
            "files": files,
            "tasks": form.getlist("tasks"),
            "source": form.get("source", ""),
            "license": form.get("license", ""),
        }
        serializer = ImageUploadSerializer(data=data)
        serializer.is_valid(raise_exception=True)
        values = serializer.validated_data
        tasks = services.tasks_by_slugs(benchmark, values["tasks"])
        results = services.ingest_uploads(
            benchmark, values["files"], user=request.user, tasks=tasks, source=values["source"], license=values["license"]
        )
        for r in refused:  # in the order the files were sent, as the uploader expects
            results.insert(r.position, {"name": r.name, "outcome": "error", "message": r.message})
        added = any(r["outcome"] == "added" for r in results)
        return Response({"results": results}, status=status.HTTP_201_CREATED if added else status.HTTP_200_OK)


class ImageDetail(generics.RetrieveAPIView):
    serializer_class = ImageSerializer
    permission_classes = [role_permission(ANNOTATOR)]

    def get_object(self):
        return get_image_for(self.request.user, self.kwargs["slug"], self.kwargs["pk"])


class ImageScreen(generics.GenericAPIView):
    """Accept, reject (with `reason`: unidentifiable, privacy, offensive, similar, low_quality,
    or other + `note`) or reset the images listed in `ids`. Answers how many changed, their new
    state and the benchmark's status counts (what the screening grid redraws)."""

    serializer_class = ScreenSerializer
    permission_classes = [role_permission(ANNOTATOR)]
    parser_classes = [JSONParser, FormParser, MultiPartParser]

    def post(self, request, slug):
        benchmark = get_benchmark_for(request.user, slug)
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        values = serializer.validated_data
        changed = services.screen_images(
            benchmark, values["ids"], action=values["action"], user=request.user, reason=values["reason"], note=values["note"]
        )
        images = Image.objects.filter(benchmark=benchmark, pk__in=values["ids"]).order_by("pk")
        return Response(
            {
                "changed": changed,
                "images": [
                    {
                        "id": i.pk,
                        "status": i.status,
                        "reject_reason": i.reject_reason,
                        "reject_reason_label": i.get_reject_reason_display() if i.reject_reason else "",
                        "reject_note": i.reject_note,
                    }
                    for i in images
                ],
                "counts": status_counts(benchmark),
            }
        )


@accepts_uploads("archive")
class ImageImport(generics.GenericAPIView):
    """Researchers: start a zip or URL-list import job (multipart `kind`=zip|url_list, `file`, and
    optional `tasks`, `source`, `license`). Answers 202 with the job id; poll /api/v1/jobs/<id>/,
    the per-file report is at /jobs/<id>/."""

    serializer_class = ImportSerializer
    permission_classes = [role_permission(RESEARCHER)]
    parser_classes = [MultiPartParser]

    def post(self, request, slug):
        benchmark = get_benchmark_for(request.user, slug)
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        values = serializer.validated_data
        job = services.start_upload_import(
            benchmark,
            user=request.user,
            kind=values["kind"],
            file=values["file"],
            tasks=services.tasks_by_slugs(benchmark, values["tasks"]),
            source=values["source"],
            license=values["license"],
        )
        return Response(
            {"job_id": job.pk, "status_url": f"/api/v1/jobs/{job.pk}/", "report_url": f"/jobs/{job.pk}/"},
            status=status.HTTP_202_ACCEPTED,
        )


@accepts_uploads("data_file")
class KnownSetList(generics.ListAPIView):
    """Researchers: known image sets (SFT data, prior benchmarks) that images are checked against.
    POST multipart `name`, `kind` (sft, benchmark, other), `description` and `file` (a hash list:
    CSV with md5 and/or phash columns, or JSONL) to create or extend a set; stored images that
    match are flagged at once. Hashes already in the set are not added twice."""

    serializer_class = KnownSetSerializer
    permission_classes = [role_permission(RESEARCHER)]
    parser_classes = [MultiPartParser]

    def get_queryset(self):
        return known_sets()

    def post(self, request):
        serializer = KnownSetImportSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        values = serializer.validated_data
        upload = values["file"]
        rows = services.parse_hash_list(upload.read(), upload.name)
        result = services.import_known_set(
            name=values["name"], kind=values["kind"], rows=rows, description=values["description"], user=request.user
        )
        return Response(
            {
                "id": result.known_set.pk,
                "name": result.known_set.name,
                "hashes_added": result.hashes_added,
                "images_flagged": result.images_flagged,
            },
            status=status.HTTP_201_CREATED,
        )


class KnownSetDetail(generics.RetrieveDestroyAPIView):
    """Researchers: one known set; DELETE removes it and unflags images only it had flagged."""

    serializer_class = KnownSetSerializer
    permission_classes = [role_permission(RESEARCHER)]

    def get_queryset(self):
        return known_sets()

    def perform_destroy(self, instance):
        services.delete_known_set(instance)


urlpatterns += [
    path("benchmarks/<slug:slug>/images/", ImageListUpload.as_view(), name="api-images"),
    path("benchmarks/<slug:slug>/images/screen/", changes_work_only(ImageScreen.as_view()), name="api-images-screen"),
    path("benchmarks/<slug:slug>/images/import/", ImageImport.as_view(), name="api-images-import"),
    path("benchmarks/<slug:slug>/images/<id:pk>/", ImageDetail.as_view(), name="api-image-detail"),
    path("known-sets/", KnownSetList.as_view(), name="api-known-sets"),
    path("known-sets/<id:pk>/", KnownSetDetail.as_view(), name="api-known-set-detail"),
]
