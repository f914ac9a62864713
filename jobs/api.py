from django.urls import path
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from benchforge.inputs import BadInput
from benchforge.roles import ANNOTATOR, RESEARCHER, role_permission

from . import registry, services
from .models import Job, JobEntry
from .selectors import get_job_for, job_entries, jobs_list, with_benchmarks


class JobSerializer(serializers.ModelSerializer):
    percent = serializers.IntegerField(read_only=True)
    benchmark = serializers.SerializerMethodField(help_text="the slug of the job's benchmark (null: none)")
    label = serializers.SerializerMethodField()
    state = serializers.ChoiceField(
        choices=[*Job.Status.choices, ("interrupted", "Interrupted"), ("unsent", "Not sent")],
        read_only=True,
        help_text="status, or 'interrupted' when a running job's worker stopped beating, or 'unsent' when a "
        "queued job never reached the job queue (it was unreachable; resume it to send it again)",
    )
    can_resume = serializers.BooleanField(read_only=True)
    worker = serializers.CharField(read_only=True, help_text="the worker (node name and process id) of the latest run")
    recoveries = serializers.IntegerField(
        read_only=True, help_text="times the job was re-queued automatically because its worker was lost"
    )
    run_log = serializers.ListField(
        child=serializers.DictField(),
        read_only=True,
        help_text="each run: run (number), worker, started_at, recovered (started by the sweeper after a lost worker)",
    )
    can_cancel = serializers.BooleanField(read_only=True)
    entries = serializers.SerializerMethodField(
        help_text="where each unit's outcome is listed (paginated; ?outcome=error for the problems)"
    )

    class Meta:
        model = Job
        fields = [
            "id",
            "kind",
            "label",
            "benchmark",
            "status",
            "state",
            "total",
            "done",
            "percent",
            "message",
            "result",
            "runs",
            "worker",
            "recoveries",
            "run_log",
            "created_at",
            "started_at",
            "finished_at",
            "heartbeat_at",
            "can_resume",
            "can_cancel",
            "entries",
        ]

    def get_benchmark(self, job) -> str | None:
        benchmark = getattr(job, "benchmark", None) or registry.benchmark(job.benchmark_id)
        return benchmark.slug if benchmark is not None else None

    def get_label(self, job) -> str:
        return registry.label(job.kind)

    def get_entries(self, job) -> str:
        return f"/api/v1/jobs/{job.pk}/entries/"


class JobEntrySerializer(serializers.ModelSerializer):
    class Meta:
        model = JobEntry
        fields = ["key", "outcome", "message", "created_at"]


class JobList(generics.ListAPIView):
    """Jobs you can see, newest first; filter by `benchmark` (slug), `kind` and `state`."""

    serializer_class = JobSerializer
    permission_classes = [role_permission(ANNOTATOR)]

    @extend_schema(
        parameters=[
            OpenApiParameter("benchmark", str),
            OpenApiParameter("kind", str),
            OpenApiParameter("state", str, enum=[*Job.Status.values, "interrupted"]),
        ]
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def paginate_queryset(self, queryset):
        page = super().paginate_queryset(queryset)
        return None if page is None else with_benchmarks(page)  # one benchmark lookup per page

    def get_queryset(self):
        params = self.request.query_params
        return jobs_list(
            self.request.user, benchmark=params.get("benchmark", ""), kind=params.get("kind", ""), state=params.get("state", "")
        )


class JobDetail(generics.RetrieveAPIView):
    """One job: progress, status ('interrupted' when its worker died), summary."""

    serializer_class = JobSerializer
    permission_classes = [role_permission(ANNOTATOR)]

    def get_object(self):
        return get_job_for(self.request.user, self.kwargs["pk"])


class JobEntries(generics.ListAPIView):
    """Every unit of a job and what happened to it, as its page shows them: for an import, one
    entry per row ("line 7: answer 'E' is not among the options"). Filter with `outcome`."""

    serializer_class = JobEntrySerializer
    permission_classes = [role_permission(ANNOTATOR)]

    @extend_schema(parameters=[OpenApiParameter("outcome", str, enum=JobEntry.Outcome.values)])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        outcome = self.request.query_params.get("outcome", "")
        if outcome and outcome not in JobEntry.Outcome.values:
            raise BadInput(f"outcome must be one of {', '.join(JobEntry.Outcome.values)}, not '{outcome[:20]}'.")
        return job_entries(get_job_for(self.request.user, self.kwargs["pk"]), outcome=outcome)


class JobAction(APIView):
    """Researchers: POST to resume a failed, cancelled or interrupted job (it skips the units already
    done), or to cancel a queued or running one (what it did stays done)."""

    permission_classes = [role_permission(RESEARCHER)]
    action = ""

    @extend_schema(request=None, responses={200: JobSerializer})
    def post(self, request, pk):
        job = get_job_for(request.user, pk)
        job = services.resume(job, user=request.user) if self.action == "resume" else services.cancel(job, user=request.user)
        return Response(JobSerializer(job).data)


urlpatterns = [
    path("jobs/", JobList.as_view(), name="api-jobs"),
    path("jobs/<id:pk>/", JobDetail.as_view(), name="api-job-detail"),
    path("jobs/<id:pk>/entries/", JobEntries.as_view(), name="api-job-entries"),
    path("jobs/<id:pk>/resume/", JobAction.as_view(action="resume"), name="api-job-resume"),
    path("jobs/<id:pk>/cancel/", JobAction.as_view(action="cancel"), name="api-job-cancel"),
]
