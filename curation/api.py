from django.urls import path
from rest_framework import generics, status
from rest_framework.response import Response

from benchforge.roles import ANNOTATOR, RESEARCHER, has_role, role_permission

from . import services
from .selectors import benchmarks_for, get_benchmark_for
from .serializers import BenchmarkSerializer, TaskSerializer


class BenchmarkList(generics.ListCreateAPIView):
    """Benchmarks you are a member of (all of them for researchers). POST (researcher) creates one, optionally from a preset."""

    serializer_class = BenchmarkSerializer
    permission_classes = [role_permission(ANNOTATOR)]

    def get_queryset(self):
        return benchmarks_for(self.request.user).prefetch_related("categories__parent", "tasks__category")

    def create(self, request, *args, **kwargs):
        if not has_role(request.user, RESEARCHER):
            return Response({"detail": "Creating a benchmark needs the researcher role."}, status=status.HTTP_403_FORBIDDEN)
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        benchmark = services.create_benchmark(
            name=data["name"], slug=data.get("slug", ""), description=data.get("description", ""),
            user=request.user, preset=data.get("preset", ""),
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
        if not has_role(request.user, RESEARCHER):
            return Response({"detail": "Editing the taxonomy needs the researcher role."}, status=status.HTTP_403_FORBIDDEN)
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
