"""The root URLconf: apps are included by name, so the project package imports no app."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from . import apidocs, i18n, views

handler400 = views.bad_request
handler403 = views.permission_denied
handler404 = views.page_not_found
handler500 = views.server_error

api_patterns = [
    path("", include("benchforge.api")),
    path("", include("jobs.api")),
    path("", include("llm.api")),
    path("", include("curation.api")),
    path("", include("annotation.api")),
    path("", include("review.api")),
    path("", include("rewrite.api")),
    path("", include("exports.api")),
    path("", include("qc.api")),
    path("", include("humaneval.api")),
    path("", include("evalserver.api")),
]

urlpatterns = [
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/password/", views.PasswordChange.as_view(), name="password-change"),
    path("accounts/lockouts/", views.lockouts, name="lockouts"),
    path("accounts/language/", i18n.set_language, name="set-language"),
    path("admin/", admin.site.urls),
    path("", include("dashboard.urls")),
    path("", include("jobs.urls")),
    path("", include("curation.urls")),
    path("", include("annotation.urls")),
    path("", include("labelstudio.urls")),
    path("", include("review.urls")),
    path("", include("analysis.urls")),
    path("", include("rewrite.urls")),
    path("", include("exports.urls")),
    path("", include("qc.urls")),
    path("", include("humaneval.urls")),
    path("", include("evalserver.urls")),
    path("api/v1/", include(api_patterns)),
    # YAML by default; JSON with ?format=json or Accept: application/json.
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", apidocs.swagger_ui, name="api-docs"),
    path("api/docs/redoc/", apidocs.redoc, name="api-redoc"),
    path("favicon.ico", views.favicon),
]
