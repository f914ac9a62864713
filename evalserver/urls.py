from django.urls import path

from . import views

urlpatterns = [
    path("eval/", views.home, name="eval-home"),
    path("eval/new/", views.new_window, name="eval-new"),
    path("eval/<id:pk>/", views.window, name="eval-window"),
    path("eval/<id:pk>/join/", views.join, name="eval-join"),
    path("eval/<id:pk>/submit/", views.submit, name="eval-submit"),
    path("eval/<id:pk>/token/", views.new_token, name="eval-token"),
    path("eval/<id:pk>/card/", views.release_card, name="eval-card"),
    path("eval/<id:pk>/bundle/", views.bundle, name="eval-bundle"),
    path("eval/<id:pk>/baseline/", views.baseline, name="eval-baseline"),
    path("eval/<id:pk>/close/", views.close, name="eval-close"),
    path("eval/<id:pk>/submissions/<id:sub>/publish/", views.publish, name="eval-publish"),
    path("eval/<id:pk>/submissions/<id:sub>/hide/", views.hide, name="eval-hide"),
    path("leaderboard/<slug:slug>/<str:version>/", views.public_board, name="eval-public"),
    path("leaderboard/<slug:slug>/<str:version>/board.json", views.public_board, {"fmt": "json"}, name="eval-public-json"),
    path("leaderboard/<slug:slug>/<str:version>/board.csv", views.public_board, {"fmt": "csv"}, name="eval-public-csv"),
]
