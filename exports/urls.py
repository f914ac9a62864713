from django.urls import path

from . import views

urlpatterns = [
    path("b/<slug:slug>/releases/", views.release_list, name="release-list"),
    path("b/<slug:slug>/releases/<str:version>/", views.release_detail, name="release-detail"),
    path("b/<slug:slug>/releases/<str:version>/build/", views.release_build, name="release-build"),
    path("b/<slug:slug>/releases/<str:version>/freeze/", views.release_freeze, name="release-freeze"),
    path("b/<slug:slug>/releases/<str:version>/card/", views.release_card, name="release-card"),
    path("b/<slug:slug>/releases/<str:version>/chart.svg", views.release_chart, name="release-chart"),
    path("b/<slug:slug>/releases/<str:version>/diff/", views.release_diff, name="release-diff"),
    path("b/<slug:slug>/releases/<str:version>/download/<str:kind>/", views.release_download, name="release-download"),
    path("b/<slug:slug>/releases/<str:version>/leaderboard/", views.release_leaderboard, name="release-leaderboard"),
    path("b/<slug:slug>/releases/<str:version>/leaderboard/<id:pk>/", views.release_score, name="release-score"),
    path(
        "b/<slug:slug>/releases/<str:version>/leaderboard/<id:pk>/chart.svg",
        views.release_score_chart,
        name="release-score-chart",
    ),
    path(
        "b/<slug:slug>/releases/<str:version>/leaderboard/<id:pk>/predictions.jsonl",
        views.release_score_predictions,
        name="release-score-predictions",
    ),
]
