from django.urls import path

from . import views

urlpatterns = [
    path("b/<slug:slug>/human-eval/", views.home, name="humaneval-home"),
    path("b/<slug:slug>/human-eval/new/", views.plan, name="humaneval-plan"),
    path("b/<slug:slug>/human-eval/<id:number>/", views.study_detail, name="humaneval-study"),
    path("b/<slug:slug>/human-eval/<id:number>/queue/", views.queue, name="humaneval-queue"),
    path("b/<slug:slug>/human-eval/<id:number>/next/", views.next_rating, name="humaneval-next"),
    path("b/<slug:slug>/human-eval/<id:number>/rate/<id:pk>/", views.rate, name="humaneval-rate"),
    path("b/<slug:slug>/human-eval/<id:number>/images/<id:pk>/", views.image, name="humaneval-image"),
    path("b/<slug:slug>/human-eval/<id:number>/chart-<str:kind>.svg", views.chart, name="humaneval-chart"),
    path("b/<slug:slug>/human-eval/<id:number>/ratings.<str:kind>", views.export, name="humaneval-export"),
    path("b/<slug:slug>/human-eval/<id:number>/import/", views.import_ratings, name="humaneval-import"),
    path("b/<slug:slug>/human-eval/<id:number>/close/", views.close, name="humaneval-close"),
    path("b/<slug:slug>/human-eval/<id:number>/cite/", views.cite, name="humaneval-cite"),
    path("b/<slug:slug>/human-eval/<id:number>/validation/", views.validation, name="humaneval-validation"),
]
