from django.urls import path, re_path

from . import views

urlpatterns = [
    path("benchmarks/new/", views.benchmark_create, name="benchmark-create"),
    path("b/<slug:slug>/taxonomy/", views.taxonomy, name="taxonomy"),
    path("b/<slug:slug>/taxonomy/preset/", views.preset_load, name="preset-load"),
    path("b/<slug:slug>/taxonomy/<slug:task_slug>/", views.task_edit, name="task-edit"),
    path("b/<slug:slug>/settings/", views.benchmark_settings, name="benchmark-settings"),
    path("b/<slug:slug>/images/", views.image_grid, name="image-grid"),
    path("b/<slug:slug>/images/progress/", views.image_progress, name="image-progress"),
    path("b/<slug:slug>/images/upload/", views.image_upload, name="image-upload"),
    path("b/<slug:slug>/images/import/", views.image_import, name="image-import"),
    path("b/<slug:slug>/images/near-duplicates/", views.near_duplicates, name="near-duplicates"),
    path("b/<slug:slug>/images/<id:pk>/near-duplicate/", views.near_duplicate_resolve, name="near-duplicate-resolve"),
    path("b/<slug:slug>/images/contamination/", views.contamination, name="contamination"),
    path("known-sets/", views.known_sets_page, name="known-sets"),
    path("known-sets/<id:pk>/delete/", views.known_set_delete, name="known-set-delete"),
    # Stored images and thumbnails, only to users who may see a benchmark holding them (checked on
    # each request), read from the media storage (local disk or S3); nothing else stored there is served.
    re_path(r"^media/(?P<path>.+)$", views.media_file, name="media"),
]
