"""/api/v1/llm/: the declared endpoints, cost estimates, and LLM batches. Researchers only."""

from django.shortcuts import get_object_or_404
from django.urls import path
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from benchforge.errors import DomainError
from benchforge.roles import RESEARCHER, role_permission
from benchforge_harness.llm import DEFAULT_COMPLETION_TOKENS, IMAGE_TOKENS

from . import services
from .client import get_endpoint, load_models
from .models import LLMBatch, LLMCall
from .selectors import batch_calls, batch_overview

MAX_CALLS_PER_REQUEST = 20_000
NO_PRICES = "unknown: the endpoint declares no prices (input_cost_per_mtok, output_cost_per_mtok in the models file)"


class CallSerializer(serializers.Serializer):
    key = serializers.CharField(
        max_length=services.MAX_KEY_LENGTH, required=False, help_text="unique in the batch (default: its position)"
    )
    messages = serializers.ListField(
        child=serializers.DictField(),
        min_length=1,
        max_length=1000,
        help_text="chat messages: {role, content}, content a text or OpenAI-style parts",
    )
    params = serializers.DictField(
        required=False, help_text="request params (temperature, max_tokens...) over the endpoint's defaults"
    )


class EstimateRequestSerializer(serializers.Serializer):
    endpoint = serializers.CharField(max_length=200, help_text="a name declared in the models file")
    calls = serializers.ListField(child=CallSerializer(), min_length=1, max_length=MAX_CALLS_PER_REQUEST)
    expected_completion_tokens = serializers.IntegerField(min_value=0, max_value=1_000_000, default=DEFAULT_COMPLETION_TOKENS)


class EstimateSerializer(serializers.Serializer):
    calls = serializers.IntegerField()
    prompt_tokens = serializers.IntegerField()
    completion_tokens = serializers.IntegerField()
    cost = serializers.FloatField(
        allow_null=True, help_text="at the endpoint's prices per million tokens; null: no prices declared"
    )
    cost_note = serializers.CharField(help_text="how the numbers were made, or why the cost is unknown")


class BatchRequestSerializer(EstimateRequestSerializer):
    label = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)
    parts = serializers.IntegerField(min_value=1, max_value=64, default=1, help_text="jobs to split it into (workers at once)")


class BatchJobSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    state = serializers.CharField()
    done = serializers.IntegerField()
    total = serializers.IntegerField()


class UsageSerializer(serializers.Serializer):
    requests = serializers.IntegerField(help_text="HTTP requests made, retries included")
    answered_from_cache = serializers.IntegerField()
    prompt_tokens = serializers.IntegerField(help_text="paid for (cache hits cost nothing)")
    completion_tokens = serializers.IntegerField()
    cost = serializers.FloatField(allow_null=True)


class BatchSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    label = serializers.CharField()
    endpoint = serializers.CharField()
    created_at = serializers.DateTimeField()
    calls = serializers.IntegerField()
    ok = serializers.IntegerField()
    errors = serializers.IntegerField()
    pending = serializers.IntegerField()
    estimate = serializers.DictField(help_text="calls, prompt_tokens, completion_tokens, cost (null: no prices)")
    actual = UsageSerializer()
    jobs = BatchJobSerializer(many=True, help_text="the part jobs; resume or cancel them under /api/v1/jobs/")


class EndpointSerializer(serializers.Serializer):
    name = serializers.CharField()
    provider = serializers.CharField()
    model = serializers.CharField()
    base_url = serializers.CharField()
    vision = serializers.BooleanField()
    max_concurrency = serializers.IntegerField()
    requests_per_minute = serializers.FloatField(allow_null=True)
    input_cost_per_mtok = serializers.FloatField(allow_null=True)
    output_cost_per_mtok = serializers.FloatField(allow_null=True)
    key_set = serializers.BooleanField(help_text="its api_key_env variable is set on this server (the key is never shown)")


class LLMCallSerializer(serializers.ModelSerializer):
    class Meta:
        model = LLMCall
        fields = (
            "id",
            "key",
            "endpoint",
            "status",
            "reply",
            "finish_reason",
            "usage",
            "cached",
            "error",
            "error_status",
            "attempts",
            "answered_at",
        )


def _with_note(estimate: dict) -> dict:
    note = (
        f"rough: 1 token per 4 Latin characters, 1 per CJK character, {IMAGE_TOKENS} per image; every call paid "
        "(cached replies cost nothing)"
    )
    return {**estimate, "cost_note": note if estimate["cost"] is not None else NO_PRICES}


class EndpointList(APIView):
    """The endpoints of the models file, with their bounds and prices and whether their key is set."""

    permission_classes = (role_permission(RESEARCHER),)

    @extend_schema(responses={200: EndpointSerializer(many=True)})
    def get(self, request):
        rows = []
        for name, endpoint in sorted(load_models().items()):
            try:
                endpoint.api_key()
                key_set = True
            except Exception:  # noqa: BLE001 - an unset key is what this field reports
                key_set = False
            rows.append(
                {
                    "name": name,
                    "provider": endpoint.provider,
                    "model": endpoint.model,
                    "base_url": endpoint.base_url,
                    "vision": endpoint.vision,
                    "max_concurrency": endpoint.max_concurrency,
                    "requests_per_minute": endpoint.requests_per_minute,
                    "input_cost_per_mtok": endpoint.input_cost_per_mtok,
                    "output_cost_per_mtok": endpoint.output_cost_per_mtok,
                    "key_set": key_set,
                }
            )
        return Response(EndpointSerializer(rows, many=True).data)


class Estimate(APIView):
    """What a batch would use and cost before running it (tokens estimated, every call paid)."""

    permission_classes = (role_permission(RESEARCHER),)

    @extend_schema(request=EstimateRequestSerializer, responses={200: EstimateSerializer})
    def post(self, request):
        form = EstimateRequestSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        estimate = services.estimate(
            data["calls"], endpoint=data["endpoint"], expected_completion_tokens=data["expected_completion_tokens"]
        )
        return Response(EstimateSerializer(_with_note(estimate)).data)


class BatchCreate(APIView):
    """Run a batch of chat calls as a job (or `parts` jobs): the endpoint, its key and every call
    are checked first. Follow it here or on the job page; resume a failed or interrupted part
    with POST /api/v1/jobs/<id>/resume/ (answered calls are never asked again)."""

    permission_classes = (role_permission(RESEARCHER),)

    @extend_schema(request=BatchRequestSerializer, responses={201: BatchSerializer})
    def post(self, request):
        form = BatchRequestSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        batch = services.start_batch_in_parts(
            data["calls"],
            endpoint=data["endpoint"],
            parts=data["parts"],
            user=request.user,
            label=data["label"],
            expected_completion_tokens=data["expected_completion_tokens"],
        )
        return Response(BatchSerializer(_overview(batch)).data, status=status.HTTP_201_CREATED)


def _overview(batch: LLMBatch) -> dict:
    try:
        endpoint = get_endpoint(batch.endpoint)
    except DomainError:  # the models file changed since: counts still show, cost unknown
        endpoint = None
    return batch_overview(batch, endpoint)


class BatchDetail(APIView):
    """A batch: progress over its part jobs, the estimate, and actual usage and cost so far."""

    permission_classes = (role_permission(RESEARCHER),)

    @extend_schema(responses={200: BatchSerializer})
    def get(self, request, pk):
        return Response(BatchSerializer(_overview(get_object_or_404(LLMBatch, pk=pk))).data)


class BatchCalls(generics.ListAPIView):
    """A batch's calls with their replies or errors (the reason, after retries); filter by `status`."""

    permission_classes = (role_permission(RESEARCHER),)
    serializer_class = LLMCallSerializer

    @extend_schema(parameters=[OpenApiParameter("status", str, enum=LLMCall.Status.values)])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        batch = get_object_or_404(LLMBatch, pk=self.kwargs["pk"])
        return batch_calls(batch, status=self.request.query_params.get("status", ""))


urlpatterns = [
    path("llm/endpoints/", EndpointList.as_view(), name="api-llm-endpoints"),
    path("llm/estimate/", Estimate.as_view(), name="api-llm-estimate"),
    path("llm/batches/", BatchCreate.as_view(), name="api-llm-batches"),
    path("llm/batches/<id:pk>/", BatchDetail.as_view(), name="api-llm-batch"),
    path("llm/batches/<id:pk>/calls/", BatchCalls.as_view(), name="api-llm-batch-calls"),
]
