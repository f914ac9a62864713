from django.urls import path
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, status
from rest_framework.response import Response

from benchforge.navigation import changes_work_only
from benchforge.roles import ANNOTATOR, role_permission
from curation.selectors import get_benchmark_for

from . import services
from .selectors import (
    ITEM_FILTERS,
    assignments_for,
    get_item_for,
    item_to_change,
    items_of,
    payloads_for,
    redact_revisions,
    revisions_of,
    with_payload_data,
)
from .serializers import (
    AssignmentSerializer,
    ItemSerializer,
    ItemUpdateSerializer,
    ItemWriteSerializer,
    ProblemSerializer,
    RevisionSerializer,
    StaleSerializer,
    SubmitSerializer,
)

_FILTER_HELP = {
    "author": "filter by author (username)",
    "assignee": "filter by assignee (username)",
    "q": "words in the question, reference answer or criteria (full-text search on Postgres)",
}
_ITEM_FILTER_PARAMS = [
    OpenApiParameter(name, str, description=_FILTER_HELP.get(name, f"filter by {name}")) for name in ITEM_FILTERS
]


def _fresh(request, item):
    return payloads_for(request.user, [get_item_for(request.user, item.benchmark.slug, item.pk, payload=True)])[0]


class ItemListCreate(generics.ListCreateAPIView):
    """Items of a benchmark you belong to, newest first (filters: task slug, status, kind,
    author, assignee, q: words in their texts). POST creates a draft you author (images: accepted image ids)."""

    serializer_class = ItemSerializer
    permission_classes = [role_permission(ANNOTATOR)]

    def get_queryset(self):
        benchmark = get_benchmark_for(self.request.user, self.kwargs["slug"])
        filters = {name: self.request.query_params.get(name, "").strip() for name in ITEM_FILTERS}
        return with_payload_data(items_of(benchmark, **filters, viewer=self.request.user))

    @extend_schema(parameters=_ITEM_FILTER_PARAMS)
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def list(self, request, *args, **kwargs):
        # What a frozen release keeps private is left out of items that are not the caller's work.
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(payloads_for(request.user, page))

    @extend_schema(request=ItemWriteSerializer, responses={201: ItemSerializer, 400: ProblemSerializer})
    def post(self, request, slug):
        benchmark = get_benchmark_for(request.user, slug)
        serializer = ItemWriteSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        fields = dict(serializer.validated_data)
        if "task" not in fields:
            return Response({"detail": "Give the task (its slug).", "code": "invalid"}, status=status.HTTP_400_BAD_REQUEST)
        item = services.create_item(benchmark, user=request.user, task=fields.pop("task"), **fields)
        return Response(_fresh(request, item), status=status.HTTP_201_CREATED)


class ItemDetail(generics.GenericAPIView):
    """One item. PATCH the fields you change together with the `version` you loaded: if someone
    saved since, the answer is 409 with their current version (`current`), and nothing is overwritten."""

    serializer_class = ItemSerializer
    permission_classes = [role_permission(ANNOTATOR)]

    def get_object(self):
        return get_item_for(self.request.user, self.kwargs["slug"], self.kwargs["pk"], payload=True)

    def get(self, request, slug, pk):
        return Response(payloads_for(request.user, [self.get_object()])[0])

    @extend_schema(request=ItemUpdateSerializer, responses={200: ItemSerializer, 400: ProblemSerializer, 409: StaleSerializer})
    def patch(self, request, slug, pk):
        item = self.get_object()
        serializer = ItemUpdateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        changes = dict(serializer.validated_data)
        version = changes.pop("version")
        item = services.update_item(item, changes, expected_version=version, user=request.user)
        return Response(_fresh(request, item))


class ItemSubmit(generics.GenericAPIView):
    """Send a complete draft to review (draft/revision -> answered). 400 lists what is missing. The
    same submit of a `version` sent again (a retry) answers 200 with the submitted item."""

    serializer_class = SubmitSerializer
    permission_classes = [role_permission(ANNOTATOR)]

    @extend_schema(request=SubmitSerializer, responses={200: ItemSerializer, 400: ProblemSerializer, 409: StaleSerializer})
    def post(self, request, slug, pk):
        item = item_to_change(request.user, slug, pk)
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        item = services.submit_item(item, user=request.user, expected_version=serializer.validated_data.get("version"))
        return Response(_fresh(request, item))


class ItemHistory(generics.ListAPIView):
    """Every version of an item, newest first, each with a snapshot of its fields."""

    serializer_class = RevisionSerializer
    permission_classes = [role_permission(ANNOTATOR)]

    def get_queryset(self):
        return revisions_of(get_item_for(self.request.user, self.kwargs["slug"], self.kwargs["pk"]))

    def list(self, request, *args, **kwargs):
        item = get_item_for(request.user, self.kwargs["slug"], self.kwargs["pk"])
        page = redact_revisions(request.user, item, self.paginate_queryset(revisions_of(item)))
        return self.get_paginated_response(self.get_serializer(page, many=True).data)


class MyAssignments(generics.ListAPIView):
    """Your assignments, oldest first (default: the open ones, i.e. your queue)."""

    serializer_class = AssignmentSerializer
    permission_classes = [role_permission(ANNOTATOR)]

    @extend_schema(
        parameters=[
            OpenApiParameter("benchmark", str, description="benchmark slug"),
            OpenApiParameter("status", str, enum=["open", "done", "all"], description="default: open"),
        ]
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        wanted = self.request.query_params.get("status", "open")
        return assignments_for(
            self.request.user, benchmark=self.request.query_params.get("benchmark", ""), status="" if wanted == "all" else wanted
        )


urlpatterns = [
    path("benchmarks/<slug:slug>/items/", ItemListCreate.as_view(), name="api-items"),
    path("benchmarks/<slug:slug>/items/<id:pk>/", ItemDetail.as_view(), name="api-item-detail"),
    path("benchmarks/<slug:slug>/items/<id:pk>/submit/", changes_work_only(ItemSubmit.as_view()), name="api-item-submit"),
    path("benchmarks/<slug:slug>/items/<id:pk>/history/", ItemHistory.as_view(), name="api-item-history"),
    path("assignments/", MyAssignments.as_view(), name="api-assignments"),
]
