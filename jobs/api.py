from django.urls import path
from rest_framework import generics, serializers

from benchforge.roles import ANNOTATOR, role_permission

from .models import Job
from .selectors import visible_jobs


class JobSerializer(serializers.ModelSerializer):
    percent = serializers.IntegerField(read_only=True)
    benchmark = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = Job
        fields = ["id", "kind", "benchmark", "status", "total", "done", "percent", "message", "result", "created_at", "started_at", "finished_at"]


class JobDetail(generics.RetrieveAPIView):
    serializer_class = JobSerializer
    permission_classes = [role_permission(ANNOTATOR)]

    def get_queryset(self):
        return visible_jobs(self.request.user).distinct()


urlpatterns = [path("jobs/<id:pk>/", JobDetail.as_view(), name="api-job-detail")]
