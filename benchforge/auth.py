"""Logins and API tokens.

- Password logins (the login form and POST /api/v1/auth/token/) go through django-axes: after
  AXES_FAILURE_LIMIT failures for one username, or from one address, further attempts are
  refused without checking the password (which is also what makes guessing cheap to refuse)
  until the cool-off ends or a researcher lifts the lockout.
- API tokens are knox tokens: only a hash is stored, each expires (REST_KNOX TOKEN_TTL).
- Guessed tokens: an address that sends too many invalid tokens is answered 429 for a while.
"""

import re
from datetime import timedelta

from axes.models import AccessAttempt
from axes.utils import reset as axes_reset
from django.conf import settings
from django.contrib.auth import authenticate
from django.db.models import Max, Sum
from django.http import JsonResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.translation import ngettext
from knox.auth import TokenAuthentication
from knox.models import AuthToken
from rest_framework.authentication import get_authorization_header
from rest_framework.exceptions import AuthenticationFailed, Throttled

from benchforge.throttling import cache_count, cache_get

from .errors import DomainError
from .security import client_ip

TOKEN_PATTERN = re.compile(rb"[0-9a-f]{64}")


def _cooloff_minutes() -> int:
    return max(1, round(settings.AXES_COOLOFF_TIME.total_seconds() / 60))


def lockout_message() -> str:
    n = _cooloff_minutes()
    return ngettext(
        "Too many failed logins for this account or from this address. Try again in %(n)s minute, "
        "or ask a researcher to lift the lockout (page 'Locked logins').",
        "Too many failed logins for this account or from this address. Try again in %(n)s minutes, "
        "or ask a researcher to lift the lockout (page 'Locked logins').",
        n,
    ) % {"n": n}


def lockout_response(request, original_response=None, credentials=None):
    """What a locked-out login gets (AXES_LOCKOUT_CALLABLE): JSON for the API, a page otherwise."""
    message = lockout_message()
    if request.path_info.startswith("/api/"):
        return JsonResponse({"detail": message, "code": "locked_out"}, status=429)
    return render(request, "registration/locked_out.html", {"message": message}, status=429)


def issue_token(request, username: str, password: str) -> tuple[AuthToken, str]:
    """Check a username and password (through the lockout) and create a token; returns
    (token row, the token itself, shown once: only its hash is stored)."""
    user = authenticate(getattr(request, "_request", request), username=username, password=password)
    if user is None:
        raise DomainError("Unable to log in with this username and password.", code="invalid_credentials")
    return _new_token(user, settings.REST_KNOX["TOKEN_TTL"])


def revoke_tokens(user) -> int:
    """End every API token of `user` (after a password change: whoever held one loses it); returns how many."""
    deleted, _ = AuthToken.objects.filter(user=user).delete()
    return deleted


def create_token_for(user, ttl: timedelta | None = None) -> str:
    """A new API token for `user` (management command): returns the token, shown once."""
    return _new_token(user, ttl or settings.REST_KNOX["TOKEN_TTL"])[1]


def _new_token(user, ttl: timedelta) -> tuple[AuthToken, str]:
    # The user's expired tokens go here, when they get a new one, not on every API call (see
    # ThrottledTokenAuthentication._cleanup_token): a user's tokens cannot pile up unseen.
    AuthToken.objects.filter(user=user, expiry__lt=timezone.now()).delete()
    return AuthToken.objects.create(user=user, expiry=ttl)


class ThrottledTokenAuthentication(TokenAuthentication):
    """knox's token check, plus: a malformed token is refused before any database lookup, and an
    address with BENCHFORGE_TOKEN_FAILURE_LIMIT invalid tokens in the window gets 429."""

    def authenticate(self, request):
        auth = get_authorization_header(request).split()
        if not auth or auth[0].lower() != self.authenticate_header(request).encode().lower():
            return None
        key = f"benchforge:token-failures:{client_ip(request)}"
        window = settings.BENCHFORGE_TOKEN_FAILURE_WINDOW
        failures = cache_get(key, 0, consequence="invalid API tokens are not counted until it is back")
        if failures >= settings.BENCHFORGE_TOKEN_FAILURE_LIMIT:
            raise Throttled(
                wait=window,
                detail="Too many invalid API tokens from this address; wait and try again "
                "with a valid token (POST /api/v1/auth/token/ gives a new one).",
            )
        try:
            if len(auth) == 2 and not TOKEN_PATTERN.fullmatch(auth[1]):
                raise AuthenticationFailed("Invalid token.")
            return super().authenticate(request)
        except AuthenticationFailed:
            cache_count(key, window, consequence="invalid API tokens are not counted until it is back")
            raise

    def _cleanup_token(self, auth_token) -> bool:
        """Whether the token in hand has expired (then it is deleted). knox also reads every other
        token of the user on every API call, to delete the expired ones: a query per request, for
        rows a new token's creation removes anyway (`_new_token`)."""
        if auth_token.expiry is not None and auth_token.expiry < timezone.now():
            auth_token.delete()
            return True
        return False


# ---- lockouts a researcher can see and lift ------------------------------------------------------


def active_lockouts() -> list[dict]:
    """Usernames and addresses locked now (failures summed the way axes counts them), newest first:
    [{"kind": "username"|"address", "value", "failures", "last_attempt"}]."""
    recent = AccessAttempt.objects.filter(attempt_time__gte=timezone.now() - settings.AXES_COOLOFF_TIME)
    rows = []
    for kind, field in (("username", "username"), ("address", "ip_address")):
        grouped = (
            recent.exclude(**{field: None})
            .values(field)
            .annotate(failures=Sum("failures_since_start"), last_attempt=Max("attempt_time"))
            .filter(failures__gte=settings.AXES_FAILURE_LIMIT)
        )
        rows += [{"kind": kind, "value": g[field], "failures": g["failures"], "last_attempt": g["last_attempt"]} for g in grouped]
    return sorted(rows, key=lambda r: r["last_attempt"], reverse=True)


def lift_lockout(*, username: str = "", ip_address: str = "") -> int:
    """Forget failed attempts for a username and/or an address; returns how many rows went."""
    if not username and not ip_address:
        raise DomainError("Name the username or the address whose lockout to lift.")
    removed = 0
    if username:
        removed += axes_reset(username=username)
    if ip_address:
        removed += axes_reset(ip=ip_address)
    return removed
