"""Browser-side defences and request identity: the Content-Security-Policy, the client's
address (for login lockouts and API throttles), and redirects that never leave the site."""

from django.conf import settings
from django.utils.http import url_has_allowed_host_and_scheme

# No inline script or style anywhere: an injected <script> or on* handler does not run even if
# some template or view forgets to escape. Pages load only their own static files and images.
DEFAULT_CSP = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self'",
    "img-src": "'self' data: blob:",
    "font-src": "'self'",
    "connect-src": "'self'",
    "object-src": "'none'",
    "base-uri": "'none'",
    "form-action": "'self'",
    "frame-ancestors": "'none'",
}


def csp_header(policy: dict[str, str]) -> str:
    return "; ".join(f"{name} {value}" for name, value in policy.items())


class ContentSecurityPolicyMiddleware:
    """Sends the policy of settings.BENCHFORGE_CSP on every response that has none yet."""

    def __init__(self, get_response):
        self.get_response = get_response
        self.header = csp_header(getattr(settings, "BENCHFORGE_CSP", DEFAULT_CSP))

    def __call__(self, request):
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", self.header)
        return response


def client_ip(request) -> str | None:
    """The client's address. Behind BENCHFORGE_TRUSTED_PROXIES proxies (0 by default), the
    address the nearest trusted proxy saw, from X-Forwarded-For; never a value a client can
    choose freely, or a lockout could be dodged by sending another address each time."""
    request = getattr(request, "_request", request)  # DRF's Request wraps Django's
    proxies = getattr(settings, "BENCHFORGE_TRUSTED_PROXIES", 0)
    if proxies:
        forwarded = [a.strip() for a in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if a.strip()]
        if len(forwarded) >= proxies:
            return forwarded[-proxies]
    return request.META.get("REMOTE_ADDR") or None  # None: no address (a login made in code)


def same_site_url(request, url: str | None, fallback: str = "/") -> str:
    """`url` if it points into this site (the Referer of a refused form, a ?next=), else `fallback`."""
    if url and url_has_allowed_host_and_scheme(url, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return url
    return fallback
