"""/api/v1/benchmarks/<slug>/rewrite/...: templates and batches (researchers start them), a seed's
rewrites and their verification (reviewers and researchers), and the benchmark's numbers."""

from django.urls import path
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.selectors import get_item_for
from benchforge.inputs import id_field
from benchforge.roles import REVIEWER, role_permission
from curation.selectors import get_benchmark_for

from . import selectors, services
from .models import PromptTemplate, Rewrite, RewriteBatch, TemplateVersion


class RewriteTemplateVersionSerializer(serializers.ModelSerializer):
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = TemplateVersion
        fields = ["id", "number", "text", "note", "created_by", "created_at"]
        read_only_fields = fields


class RewriteTemplateSerializer(serializers.ModelSerializer):
    versions = RewriteTemplateVersionSerializer(many=True, read_only=True)

    class Meta:
        model = PromptTemplate
        fields = ["id", "name", "language", "versions"]
        read_only_fields = fields


class RewriteNewTemplateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    language = serializers.ChoiceField(choices=PromptTemplate.Language.choices)
    text = serializers.CharField(max_length=8000, help_text="placeholders: {question} {n} {count} {options}")


class RewriteNewVersionSerializer(serializers.Serializer):
    text = serializers.CharField(max_length=8000)
    note = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")


class RewriteBatchSerializer(serializers.ModelSerializer):
    template = serializers.CharField(source="template_version.template.name", read_only=True)
    template_version = serializers.IntegerField(source="template_version.number", read_only=True)
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    state = serializers.SerializerMethodField()
    state_reason = serializers.SerializerMethodField()
    seeds = serializers.SerializerMethodField()

    class Meta:
        model = RewriteBatch
        fields = [
            "number",
            "endpoint",
            "model",
            "template",
            "template_version",
            "n",
            "include_mcq",
            "params",
            "status",
            "state",
            "state_reason",
            "estimate",
            "usage",
            "job",
            "seeds",
            "created_by",
            "created_at",
            "finished_at",
        ]
        read_only_fields = fields

    def get_state(self, batch) -> str:
        return selectors.batch_state(batch)["label"]

    def get_state_reason(self, batch) -> str:
        return selectors.batch_state(batch)["reason"]

    def get_seeds(self, batch) -> dict:
        return selectors.batch_overview(batch)["seeds"]


class RewriteBatchRequestSerializer(serializers.Serializer):
    endpoint = serializers.CharField(max_length=200, help_text="an endpoint of the models file")
    template_version = id_field(
        required=False, help_text="id of a template version (GET templates/); default: the default Chinese template"
    )
    n = serializers.IntegerField(min_value=1, max_value=10, default=5)
    include_mcq = serializers.BooleanField(default=False)
    items = serializers.ListField(child=id_field(), required=False, help_text="seed item ids; none: every eligible seed")
    temperature = serializers.FloatField(min_value=0, max_value=2, required=False)

    def arguments(self) -> dict:
        data = self.validated_data
        params = {"temperature": data["temperature"]} if "temperature" in data else {}
        return {
            "endpoint": data["endpoint"],
            "template_version": data.get("template_version"),
            "n": data["n"],
            "include_mcq": data["include_mcq"],
            "items": data.get("items"),
            "params": params,
        }


class RewriteSerializer(serializers.ModelSerializer):
    batch = serializers.IntegerField(source="batch.number", read_only=True, allow_null=True, default=None)
    near_copy = serializers.BooleanField(read_only=True)
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    edited_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = Rewrite
        fields = [
            "id",
            "seed",
            "batch",
            "source",
            "text",
            "original_text",
            "edited",
            "created_by",
            "edited_by",
            "similarity_seed",
            "similarity_siblings",
            "near_copy",
            "state",
            "reason",
            "comment",
            "item",
        ]
        read_only_fields = fields


class RewriteTextSerializer(serializers.Serializer):
    text = serializers.CharField(max_length=4000)


class RewriteRejectSerializer(serializers.Serializer):
    reason = serializers.ChoiceField(choices=Rewrite.Reason.choices)
    comment = serializers.CharField(max_length=2000, required=False, allow_blank=True, default="")


class Templates(APIView):
    """The benchmark's prompt templates with every version (the defaults appear with the first estimate).
    POST (researchers): a new template."""

    permission_classes = [role_permission(REVIEWER)]

    @extend_schema(responses={200: RewriteTemplateSerializer(many=True)})
    def get(self, request, slug):
        benchmark = get_benchmark_for(request.user, slug)
        return Response(RewriteTemplateSerializer(selectors.templates_of(benchmark), many=True).data)

    @extend_schema(request=RewriteNewTemplateSerializer, responses={201: RewriteTemplateSerializer})
    def post(self, request, slug):
        benchmark = get_benchmark_for(request.user, slug)
        serializer = RewriteNewTemplateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        template = services.create_template(benchmark, user=request.user, **serializer.validated_data)
        return Response(RewriteTemplateSerializer(template).data, status=status.HTTP_201_CREATED)


class TemplateVersions(APIView):
    """Researchers: edit a template; its text becomes the next version."""

    permission_classes = [role_permission(REVIEWER)]

    @extend_schema(request=RewriteNewVersionSerializer, responses={201: RewriteTemplateVersionSerializer})
    def post(self, request, slug, pk):
        template = selectors.get_template(get_benchmark_for(request.user, slug), pk)
        serializer = RewriteNewVersionSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        version = services.add_version(template, user=request.user, **serializer.validated_data)
        return Response(RewriteTemplateVersionSerializer(version).data, status=status.HTTP_201_CREATED)


class Estimate(APIView):
    """What a batch would ask and cost: seeds, calls, estimated tokens and cost (null: no prices)."""

    permission_classes = [role_permission(REVIEWER)]

    @extend_schema(request=RewriteBatchRequestSerializer, responses={200: dict})
    def post(self, request, slug):
        benchmark = get_benchmark_for(request.user, slug)
        serializer = RewriteBatchRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return Response(services.estimate_batch(benchmark, **serializer.arguments()))


class Batches(APIView):
    """The benchmark's rewrite batches, newest first. POST (researchers) starts one; poll it or its job."""

    permission_classes = [role_permission(REVIEWER)]

    @extend_schema(responses={200: RewriteBatchSerializer(many=True)})
    def get(self, request, slug):
        return Response(RewriteBatchSerializer(selectors.batches_of(get_benchmark_for(request.user, slug)), many=True).data)

    @extend_schema(request=RewriteBatchRequestSerializer, responses={201: RewriteBatchSerializer})
    def post(self, request, slug):
        benchmark = get_benchmark_for(request.user, slug)
        serializer = RewriteBatchRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        batch = services.start_batch(benchmark, user=request.user, **serializer.arguments())
        return Response(RewriteBatchSerializer(selectors.get_batch(benchmark, batch.number)).data, status=status.HTTP_201_CREATED)


class BatchDetail(APIView):
    permission_classes = [role_permission(REVIEWER)]

    @extend_schema(responses={200: RewriteBatchSerializer})
    def get(self, request, slug, number):
        return Response(RewriteBatchSerializer(selectors.get_batch(get_benchmark_for(request.user, slug), number)).data)


class SeedRewrites(APIView):
    """A seed's rewrites (every batch, and those written by hand). POST {"text"} adds one by hand."""

    permission_classes = [role_permission(REVIEWER)]

    @extend_schema(responses={200: RewriteSerializer(many=True)})
    def get(self, request, slug, item_id):
        seed = get_item_for(request.user, slug, item_id)
        return Response(RewriteSerializer(selectors.seed_rewrites(seed), many=True).data)

    @extend_schema(request=RewriteTextSerializer, responses={201: RewriteSerializer})
    def post(self, request, slug, item_id):
        seed = get_item_for(request.user, slug, item_id)
        serializer = RewriteTextSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        rewrite = services.add_manual(seed, user=request.user, text=serializer.validated_data["text"])
        return Response(RewriteSerializer(rewrite).data, status=status.HTTP_201_CREATED)


class RewriteAction(APIView):
    """Verify a rewrite: approve (final; it becomes an item), reject {"reason", "comment"} or edit {"text"}."""

    permission_classes = [role_permission(REVIEWER)]
    action = ""

    def post(self, request, slug, pk):
        benchmark = get_benchmark_for(request.user, slug)
        rewrite = selectors.get_rewrite(benchmark, pk)
        if self.action == "approve":
            services.approve(rewrite, user=request.user)
        elif self.action == "reject":
            serializer = RewriteRejectSerializer(data=request.data)
            serializer.is_valid(raise_exception=True)
            services.reject(rewrite, user=request.user, **serializer.validated_data)
        else:
            serializer = RewriteTextSerializer(data=request.data)
            serializer.is_valid(raise_exception=True)
            services.edit(rewrite, user=request.user, text=serializer.validated_data["text"])
        return Response(RewriteSerializer(selectors.get_rewrite(benchmark, pk)).data)


class Approve(RewriteAction):
    action = "approve"

    @extend_schema(request=None, responses={200: RewriteSerializer})
    def post(self, request, slug, pk):
        return super().post(request, slug, pk)


class Reject(RewriteAction):
    action = "reject"

    @extend_schema(request=RewriteRejectSerializer, responses={200: RewriteSerializer})
    def post(self, request, slug, pk):
        return super().post(request, slug, pk)


class Edit(RewriteAction):
    action = "edit"

    @extend_schema(request=RewriteTextSerializer, responses={200: RewriteSerializer})
    def post(self, request, slug, pk):
        return super().post(request, slug, pk)


class Stats(APIView):
    """Seeds rewritten, rewrites generated / approved / rejected by reason, approved per seed."""

    permission_classes = [role_permission(REVIEWER)]

    @extend_schema(responses={200: dict})
    def get(self, request, slug):
        return Response(selectors.rewrite_stats(get_benchmark_for(request.user, slug)))


urlpatterns = [
    path("benchmarks/<slug:slug>/rewrite/templates/", Templates.as_view(), name="api-rewrite-templates"),
    path("benchmarks/<slug:slug>/rewrite/templates/<id:pk>/versions/", TemplateVersions.as_view(), name="api-rewrite-versions"),
    path("benchmarks/<slug:slug>/rewrite/estimate/", Estimate.as_view(), name="api-rewrite-estimate"),
    path("benchmarks/<slug:slug>/rewrite/batches/", Batches.as_view(), name="api-rewrite-batches"),
    path("benchmarks/<slug:slug>/rewrite/batches/<id:number>/", BatchDetail.as_view(), name="api-rewrite-batch"),
    path("benchmarks/<slug:slug>/rewrite/seeds/<id:item_id>/rewrites/", SeedRewrites.as_view(), name="api-rewrite-seed"),
    path("benchmarks/<slug:slug>/rewrite/rewrites/<id:pk>/approve/", Approve.as_view(), name="api-rewrite-approve"),
    path("benchmarks/<slug:slug>/rewrite/rewrites/<id:pk>/reject/", Reject.as_view(), name="api-rewrite-reject"),
    path("benchmarks/<slug:slug>/rewrite/rewrites/<id:pk>/edit/", Edit.as_view(), name="api-rewrite-edit"),
    path("benchmarks/<slug:slug>/rewrite/stats/", Stats.as_view(), name="api-rewrite-stats"),
]
