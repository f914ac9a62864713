"""The benchmark's Label Studio server: its saved connection and a client for it."""

from __future__ import annotations

import os
import re

from django.conf import settings
from django.core.exceptions import ValidationError

from benchforge import outbound, permissions
from benchforge.errors import DomainError

from ..client import LabelStudioClient, LabelStudioError
from ..models import DEFAULT_TOKEN_ENV, TOKEN_ENV_PATTERN, URL_ENV
from ..selectors import connection_for


def save_connection(benchmark, *, url: str, token_env: str, user):
    permissions.require_researcher(user, "Label Studio push and pull")
    connection = connection_for(benchmark)
    connection.url = url.strip()
    connection.token_env = token_env.strip() or DEFAULT_TOKEN_ENV
    connection.updated_by = user
    try:
        connection.full_clean(exclude=["benchmark"])
    except ValidationError as exc:
        raise DomainError(
            " ".join(f"{field}: {' '.join(errors)}" for field, errors in exc.message_dict.items()), code="invalid"
        ) from None
    check_server_url(connection.url)
    connection.save()
    return connection


def _may_be_private(url: str) -> bool:
    """A Label Studio URL a researcher typed may only point at a public address (the server sends
    a token there), unless it is the operator's LABEL_STUDIO_URL or BENCHFORGE_LABEL_STUDIO_ALLOW_PRIVATE
    is on (Label Studio on the same private network)."""
    trusted = os.environ.get(URL_ENV, "").rstrip("/")
    return settings.BENCHFORGE_LABEL_STUDIO_ALLOW_PRIVATE or bool(trusted and url.rstrip("/") == trusted)


def check_server_url(url: str) -> None:
    if url:
        outbound.check_url(url, allow_private=_may_be_private(url))


def open_client(benchmark, *, url: str = "") -> LabelStudioClient:
    connection = connection_for(benchmark)
    url = url or connection.server_url
    check_server_url(url)
    if not url:
        raise LabelStudioError(
            f"No Label Studio URL for {benchmark.name}: set it on the benchmark's Label Studio page or in the "
            f"{URL_ENV} environment variable.",
            code="labelstudio_config",
        )
    if not re.fullmatch(TOKEN_ENV_PATTERN, connection.token_env):
        raise LabelStudioError(f"'{connection.token_env}' is not a Label Studio token variable name.", code="labelstudio_config")
    # Every request connects to the address checked for the URL's host (no second lookup: no rebinding).
    return LabelStudioClient(
        url,
        os.environ.get(connection.token_env, ""),
        token_env=connection.token_env,
        transport=outbound.PinnedTransport(allow_private=_may_be_private(url)),
    )
