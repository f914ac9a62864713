from django.urls import path

from . import views

urlpatterns = [
    path("b/<slug:slug>/review/", views.review_home, name="review-home"),
    path("b/<slug:slug>/review/queue/", views.review_queue, name="review-queue"),
    path("b/<slug:slug>/review/next/", views.review_next, name="review-next"),
    path("b/<slug:slug>/review/rounds/<id:number>/", views.round_detail, name="review-round"),
    path("b/<slug:slug>/review/rounds/<id:number>/close/", views.round_close, name="review-round-close"),
    path("b/<slug:slug>/review/rounds/<id:number>/stats.csv", views.round_csv, name="review-round-csv"),
    path("b/<slug:slug>/review/<id:review_id>/", views.review_item, name="review-item"),
    path("b/<slug:slug>/items/<id:item_id>/feedback/", views.item_feedback, name="review-item-feedback"),
]
