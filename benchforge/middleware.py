from django.conf import settings
from django.contrib import messages
from django.contrib.auth.middleware import (
    LoginRequiredMiddleware as DjangoLoginRequired,
)
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect

from .concurrency import is_retryable, retry_conflict
from .errors import DomainError
from .security import same_site_url


class LoginRequiredMiddleware(DjangoLoginRequired):
    """Every page needs a login by default; the API authenticates itself (token or session)
    and answers 401/403 as JSON instead of redirecting to the login page."""

    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.path_info.startswith("/api/"):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)


def domain_error_response(request, error: DomainError):
    """How a refused request is answered: JSON under /api/; plain text to htmx and GET; else a
    message on the page the form came from (never a page of another site, whatever the Referer)."""
    if request.path_info.startswith("/api/"):
        return JsonResponse({"detail": error.message, "code": error.code, **error.extra}, status=error.status)
    if getattr(request, "htmx", False) or request.method == "GET":
        return HttpResponse(error.message, status=error.status, content_type="text/plain; charset=utf-8")
    messages.error(request, error.message)
    return redirect(same_site_url(request, request.META.get("HTTP_REFERER"), fallback="/"))


class DomainErrorMiddleware:
    """A DomainError escaping a page view becomes a readable message, not a 500; so does a deadlock or a
    serialization failure that was not retried away (409: nothing was saved, send it again)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if is_retryable(exception):  # DRF views answer theirs in benchforge.api; any other view, here
            return domain_error_response(request, retry_conflict())
        if not isinstance(exception, DomainError) or request.path_info.startswith("/api/"):
            return None  # the API's exception handler answers those
        return domain_error_response(request, exception)


class StyledNotFoundMiddleware:
    """A page that is not there gets the styled 404 (the navigation, the reason, the way back),
    in development too: with DEBUG on Django would answer with its technical page, which is the
    first thing a new user of `make run` meets on a mistyped or stale link."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if (
            settings.DEBUG
            and response.status_code == 404
            and not getattr(response, "styled_error", False)
            and response.get("Content-Type", "").startswith("text/html")
            and not request.path_info.startswith("/api/")
        ):
            from .views import page_not_found  # views import the permissions this module's users need first

            return page_not_found(request)
        return response

    def process_exception(self, request, exception):
        if isinstance(exception, Http404) and not request.path_info.startswith("/api/"):
            from .views import page_not_found

            return page_not_found(request, exception)
        return None
