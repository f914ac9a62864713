import io

from django.contrib.auth import get_user_model
from django.urls import path
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from benchforge import spreadsheet
from benchforge.inputs import id_field
from benchforge.navigation import changes_work_only
from benchforge.roles import RESEARCHER, REVIEWER, role_permission
from curation.selectors import get_benchmark_for

from . import selectors, services
from .models import REASON_LABELS, Review, ReviewRound


class RoundSerializer(serializers.ModelSerializer):
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = ReviewRound
        fields = [
            "number",
            "kind",
            "rule",
            "reviewers_per_item",
            "scope",
            "reveal_reviewers",
            "status",
            "job",
            "created_by",
            "created_at",
            "closed_at",
        ]
        read_only_fields = fields


class OpenRoundSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=ReviewRound.Kind.choices, default=ReviewRound.Kind.CROSS)
    rule = serializers.ChoiceField(choices=ReviewRound.Rule.choices, default=ReviewRound.Rule.MAJORITY)
    per_item = serializers.IntegerField(min_value=1, max_value=services.MAX_REVIEWERS_PER_ITEM, default=1)
    tasks = serializers.ListField(child=serializers.SlugField(), required=False, help_text="task slugs; none: every task")
    authors = serializers.ListField(child=serializers.CharField(max_length=150), required=False, help_text="usernames")
    reviewers = serializers.ListField(
        child=serializers.CharField(max_length=150),
        required=False,
        help_text="usernames; none: every member who may review (or the researchers, for expert)",
    )
    sample_per_task = serializers.IntegerField(min_value=1, required=False, allow_null=True)
    seed = serializers.IntegerField(default=0)
    reveal_reviewers = serializers.BooleanField(default=True)


class RoundList(generics.ListAPIView):
    """Researchers: the benchmark's review rounds, newest first. POST opens the next round over a
    scope; its items are handed out by a job (poll the round or /api/v1/jobs/<job>/)."""

    serializer_class = RoundSerializer
    permission_classes = [role_permission(RESEARCHER)]

    def get_queryset(self):
        return selectors.rounds_of(get_benchmark_for(self.request.user, self.kwargs["slug"]))

    @extend_schema(request=OpenRoundSerializer, responses={201: RoundSerializer})
    def post(self, request, slug):
        benchmark = get_benchmark_for(request.user, slug)
        serializer = OpenRoundSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        people = {u.username: u for u in benchmark.members.all()} | {request.user.username: request.user}
        for name in data.get("reviewers", []) + data.get("authors", []):
            if name not in people:
                found = get_user_model().objects.filter(username=name).first()
                if found is None:
                    return Response({"detail": f"No user '{name}'."}, status=status.HTTP_400_BAD_REQUEST)
                people[name] = found
        tasks = list(benchmark.tasks.filter(slug__in=data.get("tasks", [])))
        if len(tasks) != len(set(data.get("tasks", []))):
            return Response({"detail": "Some task slugs are not tasks of this benchmark."}, status=status.HTTP_400_BAD_REQUEST)
        review_round = services.open_round(
            benchmark,
            user=request.user,
            kind=data["kind"],
            rule=data["rule"],
            per_item=data["per_item"],
            tasks=tasks,
            authors=[people[n] for n in data.get("authors", [])],
            reviewers=[people[n] for n in data["reviewers"]] if data.get("reviewers") else None,
            sample_per_task=data.get("sample_per_task"),
            seed=data["seed"],
            reveal_reviewers=data["reveal_reviewers"],
        )
        return Response(RoundSerializer(review_round).data, status=status.HTTP_201_CREATED)


class CSVRenderer(BaseRenderer):
    """A round's numbers as CSV rows (`?format=csv`)."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        out = io.StringIO()
        rows = (
            selectors.stats_rows(data)
            if isinstance(data, dict) and "agreement" in data
            else [["detail"], [data.get("detail", "")]]
        )
        spreadsheet.writer(out).writerows(rows)
        return out.getvalue().encode("utf-8")


class RoundStats(APIView):
    """Researchers: a round's numbers: outcomes, reasons, load and turnaround per reviewer, and
    agreement on overlapping reviews (percent, Cohen's kappa per pair, Krippendorff's alpha).
    `?format=csv` gives the same numbers as CSV."""

    permission_classes = [role_permission(RESEARCHER)]
    renderer_classes = [JSONRenderer, CSVRenderer]

    @extend_schema(parameters=[OpenApiParameter("format", str, enum=["json", "csv"])], responses={200: dict})
    def get(self, request, slug, number):
        review_round = selectors.get_round(get_benchmark_for(request.user, slug), number)
        return Response(selectors.round_stats(review_round))


class RoundClose(APIView):
    """Researchers: close a round now (items with some verdicts are decided from them; others leave
    it as they came). Closing a closed round changes nothing."""

    permission_classes = [role_permission(RESEARCHER)]

    @extend_schema(request=None, responses={200: RoundSerializer})
    def post(self, request, slug, number):
        review_round = selectors.get_round(get_benchmark_for(request.user, slug), number)
        return Response(RoundSerializer(services.close_round(review_round, user=request.user)).data)


class ReviewSerializer(serializers.ModelSerializer):
    round = serializers.IntegerField(source="round.number", read_only=True)
    benchmark = serializers.CharField(source="round.benchmark.slug", read_only=True)

    class Meta:
        model = Review
        fields = [
            "id",
            "benchmark",
            "round",
            "item",
            "verdict",
            "reasons",
            "comment",
            "item_version",
            "assigned_at",
            "submitted_at",
        ]
        read_only_fields = fields


class VerdictSerializer(serializers.Serializer):
    verdict = serializers.ChoiceField(choices=Review.Verdict.choices)
    reasons = serializers.ListField(child=serializers.ChoiceField(choices=list(REASON_LABELS)), required=False, default=list)
    comment = serializers.CharField(required=False, allow_blank=True, default="", max_length=5000)
    version = id_field(help_text="the item version you judged; a newer one answers 409")


class MyReviews(generics.ListAPIView):
    """Your reviews still to give in a benchmark's open rounds, oldest first (your review queue)."""

    serializer_class = ReviewSerializer
    permission_classes = [role_permission(REVIEWER)]

    def get_queryset(self):
        return selectors.pending_reviews(self.request.user, get_benchmark_for(self.request.user, self.kwargs["slug"]))


class ReviewDetail(APIView):
    """One of your reviews. POST a verdict (accept, revision, reject), reasons (required unless
    accepting), a comment and the item version you judged. The same verdict sent again answers 200;
    a different one after the round decided the item, or once the round is closed, answers 409."""

    permission_classes = [role_permission(REVIEWER)]

    @extend_schema(responses={200: ReviewSerializer})
    def get(self, request, slug, pk):
        return Response(ReviewSerializer(selectors.get_review_for(request.user, get_benchmark_for(request.user, slug), pk)).data)

    @extend_schema(request=VerdictSerializer, responses={200: ReviewSerializer})
    def post(self, request, slug, pk):
        review = selectors.get_review_for(request.user, get_benchmark_for(request.user, slug), pk)
        serializer = VerdictSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        review = services.submit_review(
            review,
            user=request.user,
            verdict=data["verdict"],
            reasons=data["reasons"],
            comment=data["comment"],
            item_version=data["version"],
        )
        review.refresh_from_db()
        return Response(ReviewSerializer(review).data)


urlpatterns = [
    path("benchmarks/<slug:slug>/review/rounds/", RoundList.as_view(), name="api-review-rounds"),
    path("benchmarks/<slug:slug>/review/rounds/<id:number>/", RoundStats.as_view(), name="api-review-round"),
    path("benchmarks/<slug:slug>/review/rounds/<id:number>/close/", RoundClose.as_view(), name="api-review-round-close"),
    path("benchmarks/<slug:slug>/reviews/", MyReviews.as_view(), name="api-reviews"),
    path("benchmarks/<slug:slug>/reviews/<id:pk>/", changes_work_only(ReviewDetail.as_view()), name="api-review-detail"),
]
