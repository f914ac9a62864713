from django.contrib import messages
from django.contrib.auth.middleware import LoginRequiredMiddleware as DjangoLoginRequired
from django.http import HttpResponse
from django.shortcuts import redirect

from .errors import DomainError


class LoginRequiredMiddleware(DjangoLoginRequired):
    """Every page needs a login by default; the API authenticates itself (token or session)
    and answers 401/403 as JSON instead of redirecting to the login page."""

    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.path_info.startswith("/api/"):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)


class DomainErrorMiddleware:
    """A DomainError escaping a page view becomes a readable message, not a 500."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, DomainError) or request.path_info.startswith("/api/"):
            return None
        if getattr(request, "htmx", False) or request.method == "GET":
            return HttpResponse(exception.message, status=exception.status, content_type="text/plain; charset=utf-8")
        messages.error(request, exception.message)
        return redirect(request.META.get("HTTP_REFERER") or "home")
