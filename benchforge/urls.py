from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView

from curation.views import media_file

from . import views

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
]

urlpatterns = [
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/lockouts/", views.lockouts, name="lockouts"),
    path("admin/", admin.site.urls),
    path("", views.home, name="home"),
    path("b/<slug:slug>/", views.dashboard, name="dashboard"),
    path("", include("jobs.urls")),
    path("", include("curation.urls")),
    path("", include("annotation.urls")),
    path("", include("labelstudio.urls")),
    path("api/v1/", include(api_patterns)),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
]

# Stored images and thumbnails, only to users who may see a benchmark holding them (curation
# checks each request); nothing else under MEDIA_ROOT is served.
urlpatterns += [re_path(r"^media/(?P<path>.+)$", media_file, name="media")]
