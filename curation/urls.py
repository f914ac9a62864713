from django.urls import path

from . import views

urlpatterns = [
    path("benchmarks/new/", views.benchmark_create, name="benchmark-create"),
    path("b/<slug:slug>/taxonomy/", views.taxonomy, name="taxonomy"),
    path("b/<slug:slug>/taxonomy/preset/", views.preset_load, name="preset-load"),
    path("b/<slug:slug>/taxonomy/<slug:task_slug>/", views.task_edit, name="task-edit"),
    path("b/<slug:slug>/settings/", views.benchmark_settings, name="benchmark-settings"),
]
