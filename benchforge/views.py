import re

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.http import HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template import loader
from django.templatetags.static import static
from django.urls import reverse_lazy
from django.utils import timezone
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from . import navigation
from .auth import active_lockouts, lift_lockout, revoke_tokens
from .roles import RESEARCHER, role_required


@login_not_required
def favicon(request):
    """Browsers ask for /favicon.ico whatever the page says: point them at the static file."""
    return redirect(static("benchforge/favicon.ico"), permanent=True)


class PasswordChange(auth_views.PasswordChangeView):
    """Anyone changes their own password (the password rules apply). Django ends the user's other
    sessions; their API tokens end too, so a leaked password or token stops working at once."""

    template_name = "registration/password_change.html"
    success_url = reverse_lazy("home")

    def form_valid(self, form):
        response = super().form_valid(form)
        revoked = revoke_tokens(self.request.user)
        if revoked:
            said = gettext("Password changed: your other sessions are logged out and %(n)s API token(s) revoked.")
        else:
            said = gettext("Password changed: your other sessions are logged out.")
        messages.success(self.request, said % {"n": revoked})
        return response


# ---- login lockouts ------------------------------------------------------------------------------


LOCKOUT_KINDS = {"username": _("username"), "address": _("address")}


@role_required(RESEARCHER)
def lockouts(request):
    """Researchers: usernames and addresses locked after repeated failed logins, and lifting them."""
    cooloff = max(1, round(settings.AXES_COOLOFF_TIME.total_seconds() / 60))
    if request.method == "POST":
        kind, value = request.POST.get("kind"), request.POST.get("value", "")
        removed = lift_lockout(username=value if kind == "username" else "", ip_address=value if kind == "address" else "")
        what = LOCKOUT_KINDS.get(kind, kind)
        messages.success(
            request,
            gettext("Lockout of %(kind)s '%(value)s' lifted (%(n)s record(s) cleared).")
            % {"kind": what, "value": value, "n": removed},
        )
        return redirect("lockouts")
    return render(
        request,
        "benchforge/lockouts.html",
        {
            "rows": [{**row, "kind_label": LOCKOUT_KINDS[row["kind"]]} for row in active_lockouts()],
            "limit": settings.AXES_FAILURE_LIMIT,
            "cooloff": ngettext("%(n)s minute", "%(n)s minutes", cooloff) % {"n": cooloff},
        },
    )


# ---- error pages: JSON under /api/, a page with navigation and the reason elsewhere ---------------

ERROR_TITLES = {400: _("Bad request"), 403: _("Not allowed"), 404: _("Not found")}


def _benchmark_of(request):
    """The benchmark of a /b/<slug>/ page, when the user may see it: a refused page keeps that
    benchmark's navigation. Found by the function the owning app registers (navigation.find_benchmark)."""
    match = getattr(request, "resolver_match", None)
    slug = match.kwargs.get("slug") if match else None
    if slug is None:  # an address that matched no page may still be inside a benchmark
        found = re.match(r"^/b/([-\w]+)/", request.path_info)
        slug = found[1] if found else None
    if not slug or not request.user.is_authenticated:
        return None
    return navigation.find_benchmark(request.user, slug)


def _error(request, status: int, reason: str):
    if request.path_info.startswith("/api/"):
        return JsonResponse(
            {"detail": str(reason), "code": {400: "bad_request", 403: "forbidden", 404: "not_found"}[status]}, status=status
        )
    context = {"status": status, "title": ERROR_TITLES[status], "reason": reason}
    if status in (403, 404):
        context["benchmark"] = _benchmark_of(request)
    response = render(request, "errors/error.html", context, status=status)
    response.styled_error = True
    return response


def csrf_failure(request, reason=""):
    """A form refused by the CSRF check, styled like every other error: Django's own page needs
    inline style, which the Content-Security-Policy blocks. The usual cause is a form opened before
    a log-in or log-out elsewhere changed the token, which a reload fixes."""
    return _error(
        request,
        403,
        _(
            "This form is out of date (you logged in or out in another tab, or cookies were cleared since the page was "
            "opened), so it was not sent. Reload the page and send it again."
        ),
    )


def bad_request(request, exception=None):
    return _error(request, 400, _("The request could not be understood (malformed or too large). Go back and try again."))


def permission_denied(request, exception=None):
    reason = str(exception) if exception and str(exception) else _("Your account does not have access to this page.")
    return _error(request, 403, reason)


NOT_FOUND = _("There is nothing at this address, or it belongs to a benchmark you are not a member of.")


def page_not_found(request, exception=None):
    # Our Http404s say what is missing ("No release 2.0.0 of this benchmark."); the resolver's
    # carry a dict of the patterns tried, which is not for users.
    said = exception.args[0] if exception is not None and exception.args else None
    return _error(request, 404, said if isinstance(said, str) and said else NOT_FOUND)


def server_error(request):
    """Rendered without the request's context processors: the failure may be the database."""
    if request.path_info.startswith("/api/"):
        return JsonResponse(
            {
                "detail": str(
                    _(
                        "Server error: the request could not be finished. Try again; if it persists, report the time of the request."
                    )
                ),
                "code": "server_error",
            },
            status=500,
        )
    body = loader.get_template("errors/500.html").render({"when": timezone.now().strftime("%Y-%m-%d %H:%M:%S")})
    return HttpResponse(body, status=500)
