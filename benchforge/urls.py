from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path
from django.views.static import serve
from drf_spectacular.views import SpectacularAPIView

from . import views

api_patterns = [
    path("", include("benchforge.api")),
    path("", include("jobs.api")),
    path("", include("curation.api")),
]

urlpatterns = [
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("", views.home, name="home"),
    path("b/<slug:slug>/", views.dashboard, name="dashboard"),
    path("", include("jobs.urls")),
    path("", include("curation.urls")),
    path("api/v1/", include(api_patterns)),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
]

# Media needs a login like every page (LoginRequiredMiddleware); `serve` refuses paths
# outside MEDIA_ROOT. In production put authenticated storage in front instead.
urlpatterns += [re_path(r"^media/(?P<path>.+)$", serve, {"document_root": settings.MEDIA_ROOT}, name="media")]
