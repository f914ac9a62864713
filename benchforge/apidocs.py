"""The API's documentation pages: Swagger UI and ReDoc, both from drf-spectacular-sidecar's
static files (nothing is fetched from a CDN), both under the app's Content-Security-Policy.

Swagger UI runs under the default policy. ReDoc needs three things the default refuses, so its
page alone gets REDOC_CSP (docs/security.md explains each):
- it creates empty <style> elements and fills them through the CSSOM (styled-components in
  production mode): the hash of the empty string is allowed, no other inline style;
- its search index runs in a Web Worker built from a blob: URL (`worker-src blob:`);
- nothing else: its inline CSS and its vendor logo (an image on a CDN) are handled by
  static/benchforge/redoc-offline.js, which runs before ReDoc starts."""

from django.contrib.auth.decorators import login_required
from django.middleware.csrf import get_token
from django.shortcuts import render
from django.templatetags.static import static
from django.urls import reverse

from .security import DEFAULT_CSP, csp_header

# sha256 of the empty string: the only inline <style> content ReDoc's page may hold.
EMPTY_STYLE_HASH = "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='"
REDOC_CSP = {
    **DEFAULT_CSP,
    "style-src": f"'self' {EMPTY_STYLE_HASH}",
    "worker-src": "blob:",
}


@login_required
def swagger_ui(request):
    return render(
        request,
        "api/swagger_ui.html",
        {
            "schema_url": reverse("api-schema") + "?format=json",
            "csrf_token_value": get_token(request),
            "bundle": static("drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js"),
            "css": static("drf_spectacular_sidecar/swagger-ui-dist/swagger-ui.css"),
        },
    )


@login_required
def redoc(request):
    response = render(
        request,
        "api/redoc.html",
        {
            "schema_url": reverse("api-schema") + "?format=json",
            "bundle": static("drf_spectacular_sidecar/redoc/bundles/redoc.standalone.js"),
        },
    )
    response["Content-Security-Policy"] = csp_header(REDOC_CSP)
    return response
