"""The evaluation server's API. For teams: a window's rules and the team's quota, submitting a
predictions file (multipart), the team's own submissions and their scores, publishing; a team
authenticates with its token (`Authorization: Team <token>`) or a logged-in member's session. For
researchers (the pages' permissions): listing, opening and closing windows."""

from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.http import Http404
from django.urls import path
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.authentication import SessionAuthentication
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from benchforge import permissions
from benchforge.auth import ThrottledTokenAuthentication
from benchforge.inputs import accepts_uploads
from benchforge.roles import RESEARCHER, role_permission
from curation.selectors import get_benchmark_for
from exports import selectors as release_selectors

from . import selectors, services
from .auth import TeamTokenAuthentication
from .models import Team, Window


class TeamTokenScheme(OpenApiAuthenticationExtension):
    """Documents the team token header in the OpenAPI schema."""

    target_class = TeamTokenAuthentication
    name = "teamTokenAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "`Team <token>`, the team's API token from its window page.",
        }


class SubmissionSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    model = serializers.CharField(source="model_name")
    created_at = serializers.DateTimeField()
    sha256 = serializers.CharField()
    published = serializers.BooleanField()
    link = serializers.CharField()
    hidden_reason = serializers.CharField()
    scores = serializers.SerializerMethodField()

    def get_scores(self, obj) -> dict:
        return selectors.scores_of(obj, self.context.get("items"))


class SubmissionUploadSerializer(serializers.Serializer):
    predictions = serializers.FileField()
    model = serializers.CharField(required=False, allow_blank=True, max_length=100)
    release = serializers.CharField(
        required=False, allow_blank=True, max_length=200, help_text="the bundle manifest's 'name version'"
    )


class PublishSerializer(serializers.Serializer):
    published = serializers.BooleanField()
    link = serializers.CharField(required=False, allow_blank=True, max_length=500)


class WindowSerializer(serializers.Serializer):
    """What a window's teams read of it: its rules, never which items are hidden."""

    id = serializers.IntegerField()
    title = serializers.CharField()
    release = serializers.SerializerMethodField(help_text="the bundle manifest's 'name version'")
    split = serializers.CharField()
    method = serializers.CharField()
    judge = serializers.CharField()
    opens_at = serializers.DateTimeField()
    closes_at = serializers.DateTimeField()
    is_open = serializers.BooleanField()
    items = serializers.SerializerMethodField(help_text="how many items a submission answers")
    hidden_part = serializers.BooleanField(source="has_hidden_part")

    def get_release(self, window) -> str:
        return f"{window.release.benchmark.slug} {window.release.version}"

    def get_items(self, window) -> int:
        return len(window.items)


class ResearcherWindowSerializer(WindowSerializer):
    """A window as researchers read it: every setting, the invitation link and its counts."""

    benchmark = serializers.CharField(source="release.benchmark.slug")
    version = serializers.CharField(source="release.version")
    anchor = serializers.IntegerField(source="anchor_id", allow_null=True)
    daily_limit = serializers.IntegerField()
    total_limit = serializers.IntegerField()
    cost_cap_submission = serializers.DecimalField(max_digits=12, decimal_places=4, allow_null=True)
    cost_cap_team = serializers.DecimalField(max_digits=12, decimal_places=4, allow_null=True)
    hidden_fraction = serializers.FloatField()
    split_seed = serializers.IntegerField()
    shown_items = serializers.SerializerMethodField(help_text="how many items are in the shown part")
    registration = serializers.CharField()
    feeds_analysis = serializers.BooleanField(
        help_text="teams' scores also join the release's internal leaderboard and item analysis"
    )
    invite_url = serializers.SerializerMethodField()
    teams = serializers.SerializerMethodField()
    submissions = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()

    def get_shown_items(self, window) -> int:
        return len(window.shown_items)

    def get_invite_url(self, window) -> str:
        path = f"/eval/{window.pk}/join/?invite={window.invite_token}"
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path

    def get_teams(self, window) -> int:
        counted = getattr(window, "team_count", None)  # annotated on a list: no query per row
        return window.teams.count() if counted is None else counted

    def get_submissions(self, window) -> int:
        counted = getattr(window, "submission_count", None)
        return window.submissions.count() if counted is None else counted


class TeamWindowSerializer(WindowSerializer):
    """A window as its team reads it: the rules, the team's name and its quota."""

    team = serializers.SerializerMethodField()
    quota = serializers.SerializerMethodField()

    def get_team(self, window) -> str:
        return self.context["team"].name

    def get_quota(self, window) -> dict:
        return selectors.quota_of(window, self.context["team"])


class OpenWindowSerializer(serializers.Serializer):
    """The window form's fields and bounds; the service checks the rest (frozen release, judge, anchor)."""

    benchmark = serializers.SlugField(help_text="the benchmark's slug")
    version = serializers.CharField(max_length=40, help_text="a frozen release of it")
    title = serializers.CharField(max_length=120)
    split = serializers.ChoiceField(choices=Window.Split.choices, default=Window.Split.TEST)
    method = serializers.CharField(max_length=20, help_text="pointwise, pairwise, touchstone or hallucination")
    judge = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")
    anchor = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, max_value=2**31 - 1, help_text="pairwise: a score of the release"
    )
    opens_at = serializers.DateTimeField(required=False, help_text="UTC; default: now")
    closes_at = serializers.DateTimeField(help_text="UTC")
    daily_limit = serializers.IntegerField(min_value=1, max_value=1000, default=3)
    total_limit = serializers.IntegerField(min_value=1, max_value=100000, default=30)
    cost_cap_submission = serializers.DecimalField(max_digits=12, decimal_places=4, required=False, allow_null=True, default=None)
    cost_cap_team = serializers.DecimalField(max_digits=12, decimal_places=4, required=False, allow_null=True, default=None)
    hidden_fraction = serializers.FloatField(min_value=0, max_value=services.MAX_HIDDEN_FRACTION, default=0.0)
    split_seed = serializers.IntegerField(min_value=-(2**31), max_value=2**31 - 1, default=0)
    registration = serializers.ChoiceField(choices=Window.Registration.choices, default=Window.Registration.INVITE)
    feeds_analysis = serializers.BooleanField(default=False)


class TeamView(APIView):
    authentication_classes = [TeamTokenAuthentication, ThrottledTokenAuthentication, SessionAuthentication]
    permission_classes = [IsAuthenticated]

    def team_and_window(self, request, pk):
        if isinstance(request.auth, Team):
            team = request.auth
            if team.window_id != pk:
                raise Http404("No such window.")
            return team, team.window
        window = selectors.get_window(request.user, pk)
        return selectors.require_member(request.user, window), window


class WindowList(generics.ListAPIView):
    """Submission windows: every window for a researcher, a team's own window for its token or its
    members. POST (researchers) opens one on a frozen release: 201."""

    authentication_classes = TeamView.authentication_classes
    permission_classes = [IsAuthenticated]

    def get_queryset(self):
        if isinstance(self.request.auth, Team):
            return Window.objects.select_related("release__benchmark").filter(pk=self.request.auth.window_id)
        return (
            selectors.windows_of(self.request.user)
            .annotate(team_count=Count("teams", distinct=True), submission_count=Count("submissions", distinct=True))
            .order_by("-opens_at", "-pk")
        )

    def get_serializer_class(self):
        if permissions.is_researcher(self.request.user) and not isinstance(self.request.auth, Team):
            return ResearcherWindowSerializer
        return WindowSerializer

    @extend_schema(request=OpenWindowSerializer, responses={201: ResearcherWindowSerializer})
    def post(self, request):
        if isinstance(request.auth, Team):
            raise PermissionDenied("A team token cannot open windows: use a researcher's token or session.")
        permissions.require_researcher(request.user, "Opening a submission window")
        serializer = OpenWindowSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        release = release_selectors.get_release(get_benchmark_for(request.user, data["benchmark"]), data["version"])
        anchor = None
        if data.get("anchor"):
            anchor = release_selectors.find_score(release, data["anchor"])
            if anchor is None:
                return Response(
                    {"detail": f"No score #{data['anchor']} on release {release.version}.", "anchor": ["Unknown score."]},
                    status=status.HTTP_400_BAD_REQUEST,
                )
        created = services.open_window_from(release, data, user=request.user, anchor=anchor)
        return Response(ResearcherWindowSerializer(created, context={"request": request}).data, status=status.HTTP_201_CREATED)


class WindowDetail(TeamView):
    """A window's rules; for a team also its quota, for researchers every setting."""

    @extend_schema(
        responses={
            200: PolymorphicProxySerializer(
                component_name="WindowDetail",
                serializers=[TeamWindowSerializer, ResearcherWindowSerializer],
                resource_type_field_name=None,  # told apart by their fields: a team's quota, a researcher's settings
            )
        }
    )
    def get(self, request, pk):
        if not isinstance(request.auth, Team) and permissions.is_researcher(request.user):
            window = selectors.get_window(request.user, pk)
            if selectors.team_of(request.user, window) is None:
                return Response(ResearcherWindowSerializer(window, context={"request": request}).data)
        team, window = self.team_and_window(request, pk)
        return Response(TeamWindowSerializer(window, context={"team": team}).data)


class WindowClose(APIView):
    """Researchers: close a window now (submissions stop; a hidden part's score is revealed). A
    closed window answers 409."""

    permission_classes = [role_permission(RESEARCHER)]

    @extend_schema(request=None, responses={200: ResearcherWindowSerializer})
    def post(self, request, pk):
        window = services.close_window(selectors.get_window(request.user, pk), user=request.user)
        return Response(ResearcherWindowSerializer(window, context={"request": request}).data)


@accepts_uploads("data_file")
class SubmissionList(TeamView):
    @extend_schema(responses={200: SubmissionSerializer(many=True)})
    def get(self, request, pk):
        team, window = self.team_and_window(request, pk)
        items = selectors.window_items(window)
        subs = list(selectors.team_submissions(team))
        return Response(SubmissionSerializer(subs, many=True, context={"items": items}).data)

    @extend_schema(request={"multipart/form-data": SubmissionUploadSerializer}, responses={201: SubmissionSerializer})
    def post(self, request, pk):
        team, window = self.team_and_window(request, pk)
        serializer = SubmissionUploadSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        sub = services.submit(
            window,
            user=request.user,
            team=team,
            data=data["predictions"].read(),
            model_name=data.get("model", ""),
            release_name=data.get("release", ""),
        )
        return Response(SubmissionSerializer(sub).data, status=status.HTTP_201_CREATED)


class SubmissionDetail(TeamView):
    @extend_schema(responses={200: SubmissionSerializer})
    def get(self, request, pk, sub):
        team, window = self.team_and_window(request, pk)
        found = selectors.get_submission(team.created_by if isinstance(request.auth, Team) else request.user, window, sub)
        if found.team_id != team.pk:
            raise Http404("No such submission.")
        return Response(SubmissionSerializer(found).data)


class SubmissionPublish(TeamView):
    @extend_schema(request=PublishSerializer, responses={200: SubmissionSerializer})
    def post(self, request, pk, sub):
        team, window = self.team_and_window(request, pk)
        serializer = PublishSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        found = selectors.get_submission(team.created_by, window, sub)
        updated = services.publish(
            found,
            user=team.created_by,
            published=serializer.validated_data["published"],
            link=serializer.validated_data.get("link", ""),
        )
        return Response(SubmissionSerializer(updated).data)


urlpatterns = [
    path("eval/windows/", WindowList.as_view(), name="api-eval-windows"),
    path("eval/windows/<id:pk>/", WindowDetail.as_view(), name="api-eval-window"),
    path("eval/windows/<id:pk>/close/", WindowClose.as_view(), name="api-eval-window-close"),
    path("eval/windows/<id:pk>/submissions/", SubmissionList.as_view(), name="api-eval-submissions"),
    path("eval/windows/<id:pk>/submissions/<id:sub>/", SubmissionDetail.as_view(), name="api-eval-submission"),
    path("eval/windows/<id:pk>/submissions/<id:sub>/publish/", SubmissionPublish.as_view(), name="api-eval-publish"),
]
