from django.core.files.storage import default_storage
from django.http import FileResponse
from django.urls import path
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import generics, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import withholding
from annotation.workflow import STATUS_CHOICES
from benchforge import permissions
from benchforge.inputs import accepts_uploads
from benchforge.roles import ANNOTATOR, RESEARCHER, role_permission
from curation.selectors import get_benchmark_for

from . import leaderboard, selectors, services
from .models import Release, ReleaseFile, Score


class FileSerializer(serializers.ModelSerializer):
    class Meta:
        model = ReleaseFile
        fields = ["kind", "sha256", "size"]


class ReleaseSerializer(serializers.ModelSerializer):
    source = serializers.SlugRelatedField(slug_field="version", read_only=True)
    files = serializers.SerializerMethodField()
    status = serializers.SerializerMethodField(
        help_text="the build job's state while it is not finished or did not succeed (queued, running, "
        "interrupted, unsent, failed, cancelled), else the release's own (draft, built, frozen)"
    )
    state = serializers.SerializerMethodField(help_text="the status as a person reads it, in their language")
    state_reason = serializers.SerializerMethodField(help_text="why its build failed, was cancelled or stopped (else empty)")

    def _state(self, release) -> dict:
        if getattr(release, "_work_state", None) is None:
            release._work_state = selectors.release_state(release)
        return release._work_state

    def get_status(self, release) -> str:
        return self._state(release)["code"]

    def get_state(self, release) -> str:
        return str(self._state(release)["label"])

    def get_state_reason(self, release) -> str:
        return self._state(release)["reason"]

    class Meta:
        model = Release
        fields = [
            "version",
            "status",
            "state",
            "state_reason",
            "notes",
            "statuses",
            "tasks",
            "dev_ratio",
            "split_seed",
            "private",
            "license",
            "source",
            "built_at",
            "frozen_at",
            "counts",
            "construction",
            "job",
            "files",
        ]
        read_only_fields = fields

    def get_files(self, release) -> list[dict]:
        user = self.context["request"].user
        return FileSerializer(selectors.files_for(user, release), many=True).data


class NewReleaseSerializer(serializers.Serializer):
    version = serializers.CharField(max_length=40)
    notes = serializers.CharField(required=False, allow_blank=True, default="")
    statuses = serializers.ListField(child=serializers.ChoiceField(choices=STATUS_CHOICES), required=False)
    tasks = serializers.ListField(child=serializers.SlugField(), required=False, default=list, help_text="task slugs")
    dev_ratio = serializers.FloatField(min_value=0, max_value=1, default=0.4)
    split_seed = serializers.IntegerField(default=0, min_value=0, max_value=2**31 - 1)
    private = serializers.ListField(
        child=serializers.ChoiceField(choices=withholding.CHOICES),
        default=withholding.default_private,
        help_text="what the public bundle withholds; default: the test split's answer keys, references and criteria",
    )
    license = serializers.CharField(max_length=200, default="CC BY-NC-SA 4.0")


class ReleaseNotesSerializer(serializers.Serializer):
    notes = serializers.CharField(allow_blank=True)


def _release(request, slug, version) -> Release:
    return selectors.get_release(get_benchmark_for(request.user, slug), version)


class ReleaseList(generics.ListAPIView):
    """A benchmark's releases. POST (researcher) defines one and starts its build (a job): 201. The
    same request again answers 200 with that release (no second build); another request for an
    existing version is refused with 409 naming it (`existing`)."""

    serializer_class = ReleaseSerializer
    permission_classes = [role_permission(ANNOTATOR)]

    def get_queryset(self):
        return selectors.releases_of(get_benchmark_for(self.request.user, self.kwargs["slug"])).select_related("job")

    @extend_schema(request=NewReleaseSerializer, responses={201: ReleaseSerializer, 200: ReleaseSerializer})
    def post(self, request, slug):
        benchmark = get_benchmark_for(request.user, slug)
        serializer = NewReleaseSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        tasks = list(benchmark.tasks.filter(slug__in=data["tasks"]))
        if len(tasks) != len(set(data["tasks"])):
            return Response({"detail": "Some task slugs are not tasks of this benchmark."}, status=status.HTTP_400_BAD_REQUEST)
        release, created = services.submit_release(
            benchmark,
            user=request.user,
            version=data["version"],
            notes=data["notes"],
            statuses=data.get("statuses"),
            tasks=tasks,
            dev_ratio=data["dev_ratio"],
            split_seed=data["split_seed"],
            private=data["private"],
            license=data["license"],
        )
        answer = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        return Response(ReleaseSerializer(release, context={"request": request}).data, status=answer)


class ReleaseDetail(APIView):
    """One release. PATCH its notes and DELETE a draft (researchers); a frozen release refuses both (409)."""

    permission_classes = [role_permission(ANNOTATOR)]

    @extend_schema(responses={200: ReleaseSerializer})
    def get(self, request, slug, version):
        return Response(ReleaseSerializer(_release(request, slug, version), context={"request": request}).data)

    @extend_schema(request=ReleaseNotesSerializer, responses={200: ReleaseSerializer})
    def patch(self, request, slug, version):
        permissions.require_researcher(request.user, "Editing a release")
        release = _release(request, slug, version)
        serializer = ReleaseNotesSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        release = services.set_notes(release, serializer.validated_data["notes"], user=request.user)
        return Response(ReleaseSerializer(release, context={"request": request}).data)

    @extend_schema(responses={204: None})
    def delete(self, request, slug, version):
        services.delete_release(_release(request, slug, version), user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ReleaseAction(APIView):
    """Researchers: build (again, while not frozen) or freeze a release. Building a release that is
    being built joins that build (the answer names its job); a frozen release refuses both (409)."""

    permission_classes = [role_permission(RESEARCHER)]
    action = ""

    @extend_schema(request=None, responses={200: ReleaseSerializer})
    def post(self, request, slug, version):
        release = _release(request, slug, version)
        release = (
            services.start_build(release, user=request.user)
            if self.action == "build"
            else services.freeze(release, user=request.user)
        )
        return Response(ReleaseSerializer(release, context={"request": request}).data)


class ReleaseDiff(APIView):
    """Items added, removed and changed since another release (`?against=VERSION`, default: the one it follows)."""

    permission_classes = [role_permission(ANNOTATOR)]

    @extend_schema(parameters=[OpenApiParameter("against", str)], responses={200: dict})
    def get(self, request, slug, version):
        release = _release(request, slug, version)
        against = request.query_params.get("against") or (release.source.version if release.source_id else "")
        other = _release(request, slug, against) if against else None
        if other is None:
            return Response({"detail": "Name the release to compare with: ?against=VERSION."}, status=status.HTTP_400_BAD_REQUEST)
        hide = () if permissions.is_researcher(request.user) else release.private
        return Response(services.diff(other, release, hide=hide))


class ReleaseDownload(APIView):
    """Download a built file: public.tar.gz, public.zip, parquet (members); private.tar.gz, private.zip (researchers)."""

    permission_classes = [role_permission(ANNOTATOR)]

    @extend_schema(responses={(200, "application/octet-stream"): bytes})
    def get(self, request, slug, version, kind):
        found = selectors.get_file(_release(request, slug, version), kind)
        if found.is_private:
            permissions.require_researcher(request.user, "Downloading the private bundle")
        return FileResponse(
            default_storage.open(found.storage_name, "rb"), as_attachment=True, filename=found.storage_name.rsplit("/", 1)[-1]
        )


class ValidationSerializer(serializers.Serializer):
    """Whether people validated the score's judge on this release (a human-evaluation study)."""

    number = serializers.IntegerField(help_text="the study's number")
    study = serializers.CharField(help_text="the study's title")
    ratings = serializers.IntegerField(help_text="human ratings of this model's answers")
    headline = serializers.CharField(help_text="the headline judge-human agreement")
    url = serializers.CharField()


class ScoreSerializer(serializers.ModelSerializer):
    release = serializers.SlugRelatedField(slug_field="version", read_only=True)
    anchor = serializers.SlugRelatedField(slug_field="label", read_only=True)
    headline = serializers.SerializerMethodField()
    validation = serializers.SerializerMethodField()
    job = serializers.PrimaryKeyRelatedField(read_only=True)
    estimate = serializers.SerializerMethodField(help_text="calls, tokens and cost expected before scoring ran")
    usage = serializers.SerializerMethodField(help_text="what scoring spent, from the usage ledger")

    class Meta:
        model = Score
        fields = [
            "id",
            "release",
            "label",
            "method",
            "source",
            "endpoint",
            "judge",
            "anchor",
            "status",
            "headline",
            "validation",
            "results",
            "scored_with",
            "job",
            "estimate",
            "usage",
            "created_at",
        ]

    def get_headline(self, score) -> str:
        return leaderboard.headline(score.method, score.results)

    @extend_schema_field(ValidationSerializer(allow_null=True))
    def get_validation(self, score):
        found = self.context.get("validations", {}).get(score.pk)
        return {k: v for k, v in found.items() if k != "rater_ids"} if found else None

    def get_estimate(self, score) -> dict | None:
        return leaderboard.spending(score)["estimate"]

    def get_usage(self, score) -> dict | None:
        return leaderboard.spending(score)["usage"]


class ScoreRequestSerializer(serializers.Serializer):
    label = serializers.CharField(max_length=100)
    method = serializers.ChoiceField(choices=Score.Method.choices)
    predictions = serializers.FileField(required=False)
    endpoint = serializers.CharField(required=False, default="", max_length=100)
    judge = serializers.CharField(
        required=False,
        default="",
        max_length=100,
        help_text="the judge endpoint (pointwise, pairwise); for mcq, optional: the LLM choice extractor",
    )
    anchor = serializers.IntegerField(required=False, min_value=1, max_value=2**31 - 1)


@accepts_uploads("data_file")
class Leaderboard(APIView):
    """A frozen release's scores; researchers POST a predictions file (multipart) or an endpoint to score a model."""

    permission_classes = [role_permission(ANNOTATOR)]

    @extend_schema(responses={200: ScoreSerializer(many=True)})
    def get(self, request, slug, version):
        release = _release(request, slug, version)
        validations = leaderboard.validations(release)
        return Response(ScoreSerializer(selectors.scores_of(release), many=True, context={"validations": validations}).data)

    @extend_schema(request={"multipart/form-data": ScoreRequestSerializer}, responses={201: ScoreSerializer})
    def post(self, request, slug, version):
        permissions.require_researcher(request.user, "Scoring a model")
        release = _release(request, slug, version)
        serializer = ScoreRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        anchor = selectors.find_score(release, data.get("anchor"))
        if data.get("anchor") and anchor is None:
            return Response({"detail": f"No score #{data['anchor']} on release {version}."}, status=status.HTTP_400_BAD_REQUEST)
        score = leaderboard.submit(release, user=request.user, **{**data, "anchor": anchor})
        return Response(ScoreSerializer(score).data, status=status.HTTP_201_CREATED)


urlpatterns = [
    path("benchmarks/<slug:slug>/releases/", ReleaseList.as_view(), name="api-releases"),
    path("benchmarks/<slug:slug>/releases/<str:version>/", ReleaseDetail.as_view(), name="api-release"),
    path("benchmarks/<slug:slug>/releases/<str:version>/build/", ReleaseAction.as_view(action="build"), name="api-release-build"),
    path(
        "benchmarks/<slug:slug>/releases/<str:version>/freeze/", ReleaseAction.as_view(action="freeze"), name="api-release-freeze"
    ),
    path("benchmarks/<slug:slug>/releases/<str:version>/diff/", ReleaseDiff.as_view(), name="api-release-diff"),
    path("benchmarks/<slug:slug>/releases/<str:version>/files/<str:kind>/", ReleaseDownload.as_view(), name="api-release-file"),
    path("benchmarks/<slug:slug>/releases/<str:version>/leaderboard/", Leaderboard.as_view(), name="api-release-leaderboard"),
]
