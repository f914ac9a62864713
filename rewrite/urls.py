from django.urls import path

from . import views

urlpatterns = [
    path("b/<slug:slug>/rewrite/", views.rewrite_home, name="rewrite-home"),
    path("b/<slug:slug>/rewrite/batches/<id:number>/", views.batch_detail, name="rewrite-batch"),
    path("b/<slug:slug>/rewrite/verify/", views.verify_next, name="rewrite-next"),
    path("b/<slug:slug>/rewrite/seeds/<id:item_id>/", views.verify_seed, name="rewrite-seed"),
    path("b/<slug:slug>/rewrite/templates/", views.template_list, name="rewrite-templates"),
    path("b/<slug:slug>/rewrite/templates/<id:pk>/", views.template_detail, name="rewrite-template"),
    path("b/<slug:slug>/items/<id:item_id>/rewrites/", views.item_rewrites, name="rewrite-item-count"),
]
