"""API plumbing shared by every app: error format, token login, who-am-I."""

from django.urls import path
from rest_framework import serializers
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView, exception_handler as drf_exception_handler

from .errors import DomainError
from .roles import user_role


def exception_handler(exc, context):
    """Errors are JSON with a `detail` a person can act on; domain errors keep their status."""
    if isinstance(exc, DomainError):
        return Response({"detail": exc.message, "code": exc.code, **exc.extra}, status=exc.status)
    response = drf_exception_handler(exc, context)
    if isinstance(exc, ValidationError) and isinstance(response.data, dict) and "detail" not in response.data:
        # Field errors stay as they are; `detail` adds one sentence saying all of them.
        response.data["detail"] = "; ".join(_flatten_errors(response.data)) + "."
    return response


def _flatten_errors(errors, prefix: str = "") -> list[str]:
    if isinstance(errors, dict):
        return [m for key, value in errors.items() for m in _flatten_errors(value, f"{prefix}{key}" if not prefix else f"{prefix}[{key}]")]
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


class ObtainToken(ObtainAuthToken):
    """POST username and password; returns the API token to send as `Authorization: Token <key>`."""


urlpatterns = [
    path("auth/token/", ObtainToken.as_view(), name="api-token"),
    path("me/", Me.as_view(), name="api-me"),
]
