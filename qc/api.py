"""QC under /api/v1/ (researchers): estimate and start runs, read a run's report and flagged items
with every model's answers, decide a flagged item, import an external benchmark."""

from django.urls import path
from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from benchforge.inputs import accepts_uploads
from benchforge.roles import RESEARCHER, role_permission
from curation.selectors import get_benchmark_for
from jobs.selectors import with_benchmarks

from . import selectors, services
from .models import QCItem, QCRun
from .services.imports import FORMATS
from .services.runs import MAX_PARTS


class QCRunSerializer(serializers.ModelSerializer):
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    models = serializers.ListField(source="model_names", read_only=True)
    jobs = serializers.PrimaryKeyRelatedField(many=True, read_only=True)
    usage = serializers.SerializerMethodField(help_text="what the run's jobs spent, from the usage ledger")

    status = serializers.SerializerMethodField(
        help_text="the run's jobs' state while one is not finished or did not succeed (queued, running, "
        "interrupted, unsent, failed, cancelled), else the run's own (finished)"
    )
    state = serializers.SerializerMethodField(help_text="the status as a person reads it, in their language")
    state_reason = serializers.SerializerMethodField(help_text="why it failed, was cancelled or stopped (else empty)")

    def get_usage(self, run) -> dict:
        return selectors.run_usage(run)

    def _state(self, run) -> dict:
        if getattr(run, "_work_state", None) is None:
            run._work_state = selectors.run_state(run)
        return run._work_state

    def get_status(self, run) -> str:
        return self._state(run)["code"]

    def get_state(self, run) -> str:
        return str(self._state(run)["label"])

    def get_state_reason(self, run) -> str:
        return self._state(run)["reason"]

    class Meta:
        model = QCRun
        fields = [
            "number",
            "filter",
            "models",
            "extractor",
            "judge",
            "threshold",
            "min_score",
            "early_stop",
            "parts",
            "scope",
            "estimate",
            "usage",
            "status",
            "state",
            "state_reason",
            "jobs",
            "created_by",
            "created_at",
            "finished_at",
        ]
        read_only_fields = fields


class QCScopeSerializer(serializers.Serializer):
    filter = serializers.ChoiceField(choices=QCRun.Filter.choices)
    models = serializers.ListField(
        child=serializers.CharField(max_length=100), min_length=1, help_text="endpoint names, in order"
    )
    tasks = serializers.ListField(child=serializers.SlugField(), required=False, help_text="task slugs; none: every task")
    items = serializers.ListField(child=serializers.IntegerField(min_value=1), required=False, help_text="item ids; none: all")
    extractor = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")
    judge = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")


class QCStartSerializer(QCScopeSerializer):
    threshold = serializers.FloatField(min_value=0, max_value=0.99, required=False, allow_null=True)
    min_score = serializers.IntegerField(min_value=1, max_value=10, default=7)
    early_stop = serializers.BooleanField(default=True)
    parts = serializers.IntegerField(min_value=1, max_value=MAX_PARTS, default=1)


def _scope_args(benchmark, data) -> dict:
    return {
        "filter": data["filter"],
        "models": data["models"],
        "tasks": list(benchmark.tasks.filter(slug__in=data.get("tasks", []))),
        "item_ids": data.get("items"),
        "extractor": data.get("extractor", ""),
        "judge": data.get("judge", ""),
    }


class Estimate(APIView):
    """What a run would ask without early stopping: items, calls, tokens, cost (null without prices)."""

    permission_classes = [role_permission(RESEARCHER)]

    @extend_schema(request=QCScopeSerializer, responses={200: dict})
    def post(self, request, slug):
        benchmark = get_benchmark_for(request.user, slug)
        serializer = QCScopeSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return Response(services.estimate(benchmark, **_scope_args(benchmark, serializer.validated_data)))


class RunList(generics.ListAPIView):
    """A benchmark's QC runs, newest first. POST starts one (201): its jobs are listed in `jobs`
    (poll /api/v1/jobs/<id>/ or the run)."""

    serializer_class = QCRunSerializer
    permission_classes = [role_permission(RESEARCHER)]

    def get_queryset(self):
        return selectors.runs_of(get_benchmark_for(self.request.user, self.kwargs["slug"])).prefetch_related("jobs")

    @extend_schema(request=QCStartSerializer, responses={201: QCRunSerializer})
    def post(self, request, slug):
        benchmark = get_benchmark_for(request.user, slug)
        serializer = QCStartSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        run = services.start_run(
            benchmark,
            user=request.user,
            threshold=data.get("threshold"),
            min_score=data["min_score"],
            early_stop=data["early_stop"],
            parts=data["parts"],
            **_scope_args(benchmark, data),
        )
        return Response(QCRunSerializer(run).data, status=status.HTTP_201_CREATED)


class RunReport(APIView):
    """A run and its report: flag rates per category, per-model vanilla and circular accuracy,
    extractor use, calls made vs without early stopping."""

    permission_classes = [role_permission(RESEARCHER)]

    @extend_schema(responses={200: dict})
    def get(self, request, slug, number):
        run = selectors.get_run(get_benchmark_for(request.user, slug), number)
        report = selectors.report(run)
        report.pop("chart")
        return Response({"run": QCRunSerializer(run).data, "report": report})


class QCAnswerSerializer(serializers.Serializer):
    model = serializers.CharField()
    shift = serializers.IntegerField()
    options = serializers.DictField()
    shown_answer = serializers.CharField()
    output = serializers.CharField()
    letter = serializers.CharField()
    method = serializers.CharField()
    correct = serializers.BooleanField()
    score = serializers.IntegerField(allow_null=True)
    error = serializers.CharField()


class QCEntrySerializer(serializers.ModelSerializer):
    external_id = serializers.CharField(source="item.external_id", read_only=True)
    decided_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    answers = serializers.SerializerMethodField()

    class Meta:
        model = QCItem
        fields = [
            "item",
            "external_id",
            "flagged",
            "solved_by",
            "failed_by",
            "errors",
            "not_asked",
            "decision",
            "note",
            "decided_by",
            "decided_at",
            "answers",
        ]
        read_only_fields = fields

    def get_answers(self, entry) -> list[dict]:
        rows = [a for m in selectors.answers_by_model(entry.run, entry.item_id) for a in m["answers"]]
        return QCAnswerSerializer(rows, many=True).data


class FlaggedList(generics.ListAPIView):
    """The run's flagged items with each model's answers per pass (`?undecided=1`: not decided yet)."""

    serializer_class = QCEntrySerializer
    permission_classes = [role_permission(RESEARCHER)]

    def get_queryset(self):
        run = selectors.get_run(get_benchmark_for(self.request.user, self.kwargs["slug"]), self.kwargs["number"])
        return selectors.flagged_entries(run, undecided_only=self.request.query_params.get("undecided") == "1").select_related(
            "run"
        )


class QCDecisionSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(choices=QCItem.Decision.choices)
    note = serializers.CharField(max_length=5000, required=False, allow_blank=True, default="")


class Decide(APIView):
    """Decide a flagged item: remove, keep or fix (fix passes it; edit it through the items API)."""

    permission_classes = [role_permission(RESEARCHER)]

    @extend_schema(request=QCDecisionSerializer, responses={200: QCEntrySerializer})
    def post(self, request, slug, number, item_id):
        run = selectors.get_run(get_benchmark_for(request.user, slug), number)
        serializer = QCDecisionSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        entry = services.decide(selectors.get_entry(run, item_id), user=request.user, **serializer.validated_data)
        entry.run = run
        return Response(QCEntrySerializer(entry).data)


class QCImportSerializer(serializers.Serializer):
    format = serializers.ChoiceField(choices=list(FORMATS.items()))
    file = serializers.FileField()
    name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="", help_text="a new benchmark")
    benchmark = serializers.SlugField(required=False, allow_blank=True, default="", help_text="or an existing one")


@accepts_uploads("data_file")
class Import(generics.GenericAPIView):
    """Import an external benchmark (multipart): 202 with the job; rows with problems are its error
    entries (/api/v1/jobs/<id>/)."""

    serializer_class = QCImportSerializer
    permission_classes = [role_permission(RESEARCHER)]
    parser_classes = [MultiPartParser]

    def post(self, request):
        serializer = QCImportSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        benchmark = None
        if data["benchmark"]:
            benchmark = get_benchmark_for(request.user, data["benchmark"])
        elif not data["name"].strip():
            return Response({"detail": "Give a name for a new benchmark, or the slug of one."}, status=400)
        job = services.start_import(
            user=request.user, file=data["file"], format=data["format"], name=data["name"], benchmark=benchmark
        )
        job.refresh_from_db()
        [job] = with_benchmarks([job])  # the import may have made its benchmark
        return Response(
            {"job": job.pk, "benchmark": job.benchmark.slug if job.benchmark else None, "status": job.status},
            status=status.HTTP_202_ACCEPTED,
        )


urlpatterns = [
    path("benchmarks/<slug:slug>/qc/estimate/", Estimate.as_view(), name="api-qc-estimate"),
    path("benchmarks/<slug:slug>/qc/runs/", RunList.as_view(), name="api-qc-runs"),
    path("benchmarks/<slug:slug>/qc/runs/<id:number>/", RunReport.as_view(), name="api-qc-run"),
    path("benchmarks/<slug:slug>/qc/runs/<id:number>/flagged/", FlaggedList.as_view(), name="api-qc-flagged"),
    path("benchmarks/<slug:slug>/qc/runs/<id:number>/items/<id:item_id>/decision/", Decide.as_view(), name="api-qc-decide"),
    path("qc/imports/", Import.as_view(), name="api-qc-import"),
]
