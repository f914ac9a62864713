"""API plumbing shared by every app: error format, token login, who-am-I, the root listing."""

import re

from django.urls import URLPattern, URLResolver, get_resolver, path
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import AllowAny
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework.views import exception_handler as drf_exception_handler

from .auth import issue_token
from .concurrency import is_retryable, retry_conflict
from .errors import DomainError
from .roles import user_role


def exception_handler(exc, context):
    """Errors are JSON with a `detail` a person can act on, whatever the client asked for (the
    schema view would answer in YAML otherwise); domain errors keep their status."""
    request = context.get("request")
    if request is not None:
        request.accepted_renderer, request.accepted_media_type = JSONRenderer(), JSONRenderer.media_type
    if is_retryable(exc):  # a deadlock or serialization failure not retried away: 409, send it again
        exc = retry_conflict()
    if isinstance(exc, DomainError):
        return Response({"detail": exc.message, "code": exc.code, **exc.extra}, status=exc.status)
    response = drf_exception_handler(exc, context)
    if isinstance(exc, ValidationError) and isinstance(response.data, dict) and "detail" not in response.data:
        # Field errors stay as they are; `detail` adds one sentence saying all of them.
        response.data["detail"] = "; ".join(_flatten_errors(response.data)) + "."
    return response


def _flatten_errors(errors, prefix: str = "") -> list[str]:
    if isinstance(errors, dict):
        return [
            m
            for key, value in errors.items()
            for m in _flatten_errors(value, f"{prefix}{key}" if not prefix else f"{prefix}[{key}]")
        ]
    if isinstance(errors, list):
        return [m for value in errors for m in _flatten_errors(value, prefix)]
    text = str(errors).rstrip(".")
    return [f"{prefix}: {text}" if prefix and prefix != "non_field_errors" else text]


class MeSerializer(serializers.Serializer):
    username = serializers.CharField()
    role = serializers.CharField(allow_null=True)


class Me(APIView):
    serializer_class = MeSerializer

    def get(self, request):
        return Response({"username": request.user.username, "role": user_role(request.user)})


class LoginSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=4096, trim_whitespace=False, style={"input_type": "password"})


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField(help_text="send as `Authorization: Token <token>`; shown once, stored only as a hash")
    expiry = serializers.DateTimeField()


class ObtainToken(APIView):
    """POST username and password; returns a new API token (send it as `Authorization: Token
    <token>`) and when it expires. Repeated wrong passwords lock the account and the address for
    a while (429), like the login page."""

    authentication_classes = []
    permission_classes = [AllowAny]
    throttle_scope = "login"
    serializer_class = LoginSerializer

    def post(self, request):
        serializer = LoginSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        row, token = issue_token(request, **serializer.validated_data)
        return Response(TokenSerializer({"token": token, "expiry": row.expiry}).data)


class RevokeToken(APIView):
    """POST with the token to revoke it (log out of the API)."""

    @extend_schema(request=None, responses={204: None})
    def post(self, request):
        if request.auth is None or not hasattr(request.auth, "digest"):
            raise DomainError("Send the token to revoke in the Authorization header.")
        request.auth.delete()
        return Response(status=204)


class TokenScheme(OpenApiAuthenticationExtension):
    """Documents the token header in the OpenAPI schema."""

    target_class = "benchforge.auth.ThrottledTokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "`Token <token>`, from POST /api/v1/auth/token/ (tokens expire).",
        }


API_PREFIX = "api/v1/"


def _walk(patterns, prefix: str = ""):
    for entry in patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            yield from _walk(entry.url_patterns, route)
        elif isinstance(entry, URLPattern):
            yield route, entry


def _methods(view_class, callback) -> list[str]:
    actions = getattr(callback, "actions", None)  # viewsets map methods to actions
    if actions:
        return sorted(m.upper() for m in actions)
    return [m.upper() for m in view_class.http_method_names if m not in {"options", "head"} and hasattr(view_class, m)]


def _description(view_class, callback) -> str:
    doc = (view_class.__doc__ if view_class else callback.__doc__) or ""
    doc = " ".join(doc.split())
    if not doc:
        return re.sub(r"(?<!^)(?=[A-Z])", " ", getattr(view_class or callback, "__name__", "")).capitalize()
    first = re.split(r"(?<=[.;:])\s", doc, maxsplit=1)[0]
    return first.rstrip(".;:") + "."


def api_endpoints(request) -> list[dict]:
    """Every route under /api/v1/, read from the URL config, so the list never goes stale: path,
    methods, the view's first sentence, and a link when the path has no parameters."""
    rows = []
    for route, entry in _walk(get_resolver().url_patterns):
        if not route.startswith(API_PREFIX) or entry.name == "api-root":
            continue
        view_class = getattr(entry.callback, "cls", None) or getattr(entry.callback, "view_class", None)
        url_path = "/" + route.lstrip("^").rstrip("$")
        row = {
            "path": url_path,
            "name": entry.name,
            "methods": _methods(view_class, entry.callback) if view_class else ["GET"],
            "description": _description(view_class, entry.callback),
        }
        if "<" not in url_path:
            row["url"] = request.build_absolute_uri(url_path)
        rows.append(row)
    return rows


class ApiRoot(APIView):
    """What the API offers: every endpoint with its methods, and where the documentation is."""

    @extend_schema(responses={200: dict})
    def get(self, request):
        return Response(
            {
                "name": "benchforge API",
                "version": "1",
                "authentication": "session cookie, or `Authorization: Token <token>` from POST /api/v1/auth/token/",
                "docs": {
                    "swagger_ui": request.build_absolute_uri("/api/docs/"),
                    "redoc": request.build_absolute_uri("/api/docs/redoc/"),
                    "schema": request.build_absolute_uri("/api/schema/"),
                    "schema_json": request.build_absolute_uri("/api/schema/?format=json"),
                },
                "endpoints": api_endpoints(request),
            }
        )


urlpatterns = [
    path("", ApiRoot.as_view(), name="api-root"),
    path("auth/token/", ObtainToken.as_view(), name="api-token"),
    path("auth/token/revoke/", RevokeToken.as_view(), name="api-token-revoke"),
    path("me/", Me.as_view(), name="api-me"),
]
