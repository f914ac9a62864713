from django.urls import path

from . import views

urlpatterns = [
    path("b/<slug:slug>/releases/<str:version>/analysis/", views.release_analysis, name="release-analysis"),
    path("b/<slug:slug>/releases/<str:version>/analysis/start/", views.start, name="release-analysis-start"),
    path("b/<slug:slug>/releases/<str:version>/analysis/act/", views.act, name="release-analysis-act"),
    path("b/<slug:slug>/releases/<str:version>/analysis/items.<str:kind>", views.export, name="release-analysis-export"),
    path("b/<slug:slug>/releases/<str:version>/analysis/split.json", views.split, name="release-analysis-split"),
]
