"""The human-evaluation API: researchers plan, start, read, export and import studies; raters
fetch their queue (blind: no model name, no judge verdict, no other rater's rating) and save."""

import json

from django.contrib.auth import get_user_model
from django.urls import path
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.renderers import BaseRenderer
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from benchforge import permissions
from benchforge.errors import DomainError
from benchforge.inputs import accepts_uploads
from benchforge.roles import ANNOTATOR, RESEARCHER, role_permission
from curation.selectors import get_benchmark_for
from exports.models import Release, Score

from . import exporting, selectors, services
from .models import Study


class StudySerializer(serializers.ModelSerializer):
    release = serializers.SlugRelatedField(slug_field="version", read_only=True)
    models = serializers.SerializerMethodField()

    class Meta:
        model = Study
        fields = [
            "number",
            "title",
            "mode",
            "release",
            "models",
            "per_task",
            "ratings_per_item",
            "seed",
            "status",
            "cited_on_card",
            "created_at",
        ]
        read_only_fields = fields

    def get_models(self, study) -> list[str]:
        # Researchers only reach this serializer: raters get QueueSerializer, which names no model.
        return list(study.scores.values_list("label", flat=True))


class PlanSerializer(serializers.Serializer):
    title = serializers.CharField(max_length=200, required=False, default="", help_text="raters see it: do not name a model")
    release = serializers.CharField(max_length=40, help_text="the frozen release's version")
    mode = serializers.ChoiceField(choices=Study.Mode.choices)
    scores = serializers.ListField(child=serializers.IntegerField(min_value=1, max_value=2**31 - 1), min_length=1)
    raters = serializers.ListField(child=serializers.CharField(max_length=150), min_length=2, help_text="usernames")
    per_task = serializers.IntegerField(min_value=1, max_value=1000)
    ratings_per_item = serializers.IntegerField(min_value=2, max_value=20, default=2)
    seed = serializers.IntegerField(min_value=0, max_value=2**31 - 1, default=0)
    minutes_per_rating = serializers.FloatField(min_value=0.1, max_value=120, default=1.5)


class StudyEstimateSerializer(serializers.Serializer):
    items = serializers.IntegerField()
    answers = serializers.IntegerField()
    ratings = serializers.IntegerField()
    raters = serializers.IntegerField()
    ratings_per_rater = serializers.FloatField()
    rater_hours = serializers.FloatField()
    hours_per_rater = serializers.FloatField()
    tasks = serializers.DictField(child=serializers.IntegerField())


def _planned(request, slug) -> tuple:
    benchmark = get_benchmark_for(request.user, slug)
    permissions.require_researcher(request.user, "Planning a human evaluation")
    serializer = PlanSerializer(data=request.data)
    serializer.is_valid(raise_exception=True)
    data = dict(serializer.validated_data)
    release = Release.objects.filter(benchmark=benchmark, version=data.pop("release")).first()
    if release is None:
        raise DomainError("No release of that version in this benchmark.")
    wanted = data.pop("scores")
    scores = list(Score.objects.filter(release=release, pk__in=wanted).select_related("anchor"))
    if len(scores) != len(set(wanted)):
        raise DomainError(f"Some scores are not on release {release.version}'s leaderboard.")
    names = data.pop("raters")
    raters = list(get_user_model().objects.filter(username__in=names))
    missing = sorted(set(names) - {u.username for u in raters})
    if missing:
        raise DomainError(f"No user {', '.join(missing)}.")
    return benchmark, release, data | {"scores": scores, "raters": raters}


class StudyList(APIView):
    """Studies of the benchmark (researchers: all; members: those they rate). POST (researcher)
    starts a study from leaderboard scores of a frozen release: 201."""

    permission_classes = [role_permission(ANNOTATOR)]

    @extend_schema(responses={200: StudySerializer(many=True)})
    def get(self, request, slug):
        benchmark = get_benchmark_for(request.user, slug)
        studies = selectors.studies_for(request.user, benchmark)
        if not permissions.is_researcher(request.user):
            return Response([{"number": s.number, "title": s.title, "mode": s.mode, "status": s.status} for s in studies])
        return Response(StudySerializer(studies, many=True).data)

    @extend_schema(request=PlanSerializer, responses={201: StudySerializer})
    def post(self, request, slug):
        _, release, settings = _planned(request, slug)
        title = settings.pop("title") or f"{settings['mode']} study"
        study = services.create_study(release, user=request.user, title=title, **settings)
        return Response(StudySerializer(study).data, status=status.HTTP_201_CREATED)


class StudyEstimate(APIView):
    """The plan of a study without starting it: items sampled, ratings, rater-hours."""

    permission_classes = [role_permission(RESEARCHER)]

    @extend_schema(request=PlanSerializer, responses={200: StudyEstimateSerializer})
    def post(self, request, slug):
        _, release, settings = _planned(request, slug)
        settings.pop("title")
        return Response(services.plan_study(release, user=request.user, **settings).summary())


class StudyDetail(APIView):
    """A study with its progress and every agreement figure (researchers)."""

    permission_classes = [role_permission(RESEARCHER)]

    @extend_schema(responses={200: dict})
    def get(self, request, slug, number):
        benchmark = get_benchmark_for(request.user, slug)
        study = selectors.get_study_for(request.user, benchmark, number)
        permissions.require(selectors.figures_refusal(request.user, study))
        return Response(
            {
                **StudySerializer(study).data,
                "progress": selectors.study_progress(study),
                "agreement": services.current_figures(study),
            }
        )


class QueueEntrySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    position = serializers.IntegerField()
    saved = serializers.BooleanField()
    score = serializers.IntegerField(allow_null=True, help_text="pointwise: your score")
    vote = serializers.CharField(help_text="pairwise: your vote as shown (answer1, answer2, unable_one, unable_two)")
    choice = serializers.CharField(help_text="extraction: the letter the reply commits to, or none")
    reason = serializers.CharField()
    item = serializers.DictField(
        help_text="what the judge saw: question, history, reference, criteria, answer(s); extraction: question, "
        "hint, the options as that pass showed them, the reply"
    )


def _entry(rating) -> dict:
    return {
        "id": rating.pk,
        "position": rating.position,
        "saved": rating.saved_at is not None,
        "score": rating.score,
        "vote": services.positional_of(rating.vote, rating.anchor_first) if rating.vote else "",
        "choice": rating.choice,
        "reason": rating.reason,
        "item": selectors.rating_view(rating),
    }


class Queue(APIView):
    """Your ratings in a study, in your order (`?pending=1`: only those not saved yet; at most 50)."""

    permission_classes = [role_permission(ANNOTATOR)]

    @extend_schema(
        parameters=[OpenApiParameter("pending", bool, required=False)], responses={200: QueueEntrySerializer(many=True)}
    )
    def get(self, request, slug, number):
        benchmark = get_benchmark_for(request.user, slug)
        study = selectors.get_study_for(request.user, benchmark, number)
        rater = selectors.rater_of(study, request.user)
        if rater is None:
            return Response({"detail": f"You are not a rater of study {number}."}, status=status.HTTP_404_NOT_FOUND)
        ratings = selectors.queue_of(rater).select_related("item", "study__release")
        if request.query_params.get("pending") in ("1", "true"):
            ratings = ratings.filter(saved_at=None)
        return Response([_entry(r) for r in ratings[:50]])


class RatingRequestSerializer(serializers.Serializer):
    score = serializers.IntegerField(min_value=1, max_value=10, required=False)
    vote = serializers.ChoiceField(choices=services.POSITIONAL_VOTES, required=False)
    choice = serializers.CharField(required=False, max_length=4, help_text="extraction: a shown letter, or none")
    reason = serializers.CharField(required=False, allow_blank=True, default="", max_length=5000)


class RatingSave(APIView):
    """Save your rating (again, while the study is open)."""

    permission_classes = [role_permission(ANNOTATOR)]

    @extend_schema(request=RatingRequestSerializer, responses={200: QueueEntrySerializer})
    def put(self, request, slug, number, pk):
        benchmark = get_benchmark_for(request.user, slug)
        study = selectors.get_study_for(request.user, benchmark, number)
        rating = selectors.get_rating_for(request.user, study, pk)
        serializer = RatingRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        services.save_rating(
            rating,
            user=request.user,
            score=data.get("score"),
            vote=data.get("vote", ""),
            choice=data.get("choice", ""),
            reason=data["reason"],
        )
        return Response(_entry(rating))


class _FileRenderer(BaseRenderer):
    """Lets `?format=jsonl|parquet` through DRF's content negotiation (which answers 404 to a
    format no renderer has); the view writes the file itself."""

    charset = None

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return json.dumps(data).encode() if data is not None else b""


class JSONLinesRenderer(_FileRenderer):
    media_type, format = "application/x-ndjson", "jsonl"


class ParquetRenderer(_FileRenderer):
    media_type, format = "application/vnd.apache.parquet", "parquet"


class RatingsFile(APIView):
    """A study's ratings (researchers): JSON Lines (`?format=jsonl`, default) or Parquet, `?split=1`
    adds a 90/10 train/test split per category. POST a JSON Lines file in the same format (field
    `ratings`) to import ratings collected elsewhere: all lines or none."""

    permission_classes = [role_permission(RESEARCHER)]
    renderer_classes = [*api_settings.DEFAULT_RENDERER_CLASSES, JSONLinesRenderer, ParquetRenderer]

    @extend_schema(
        parameters=[OpenApiParameter("format", str, enum=["jsonl", "parquet"]), OpenApiParameter("split", bool)],
        responses={(200, "application/x-ndjson"): str},
    )
    def get(self, request, slug, number):
        benchmark = get_benchmark_for(request.user, slug)
        study = selectors.get_study_for(request.user, benchmark, number)
        permissions.require(selectors.figures_refusal(request.user, study))
        kind = request.query_params.get("format") or "jsonl"
        if kind not in exporting.FORMATS:
            return Response(
                {"detail": f"Unknown format {kind[:20]!r}: ratings export as jsonl or parquet."},
                status=status.HTTP_400_BAD_REQUEST,
            )
        name = f"{benchmark.slug}-study-{study.number}-ratings"
        return exporting.streamed(study, kind, split=request.query_params.get("split") in ("1", "true"), name=name)

    @extend_schema(
        request={"multipart/form-data": {"type": "object", "properties": {"ratings": {"type": "string", "format": "binary"}}}},
        responses={201: dict},
    )
    def post(self, request, slug, number):
        benchmark = get_benchmark_for(request.user, slug)
        study = selectors.get_study_for(request.user, benchmark, number)
        upload = request.FILES.get("ratings")
        if upload is None:
            return Response({"detail": "Send the ratings file in the field 'ratings'."}, status=status.HTTP_400_BAD_REQUEST)
        count = services.import_ratings(study, upload.read(), user=request.user)
        return Response({"imported": count}, status=status.HTTP_201_CREATED)


RatingsFile = accepts_uploads("data_file")(RatingsFile)


class CardCitationSerializer(serializers.Serializer):
    cited = serializers.BooleanField(help_text="true: the release's card page cites this closed study; false: no longer")


class CardCitation(APIView):
    """Cite a closed study on its release's card page, or stop (researchers)."""

    permission_classes = [role_permission(RESEARCHER)]

    @extend_schema(request=CardCitationSerializer, responses={200: StudySerializer})
    def put(self, request, slug, number):
        benchmark = get_benchmark_for(request.user, slug)
        study = selectors.get_study_for(request.user, benchmark, number)
        serializer = CardCitationSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        services.cite_on_card(study, user=request.user, cite=serializer.validated_data["cited"])
        return Response(StudySerializer(study).data)


urlpatterns = [
    path("benchmarks/<slug:slug>/human-eval/studies/", StudyList.as_view(), name="api-studies"),
    path("benchmarks/<slug:slug>/human-eval/estimate/", StudyEstimate.as_view(), name="api-study-estimate"),
    path("benchmarks/<slug:slug>/human-eval/studies/<id:number>/", StudyDetail.as_view(), name="api-study"),
    path("benchmarks/<slug:slug>/human-eval/studies/<id:number>/queue/", Queue.as_view(), name="api-study-queue"),
    path("benchmarks/<slug:slug>/human-eval/studies/<id:number>/ratings/<id:pk>/", RatingSave.as_view(), name="api-rating"),
    path("benchmarks/<slug:slug>/human-eval/studies/<id:number>/ratings/", RatingsFile.as_view(), name="api-study-ratings"),
    path("benchmarks/<slug:slug>/human-eval/studies/<id:number>/card/", CardCitation.as_view(), name="api-study-card"),
]
