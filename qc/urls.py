from django.urls import path

from . import views

urlpatterns = [
    path("qc/import/", views.import_page, name="qc-import"),
    path("b/<slug:slug>/qc/", views.qc_home, name="qc-home"),
    path("b/<slug:slug>/qc/runs/<id:number>/", views.run_detail, name="qc-run"),
    path("b/<slug:slug>/qc/runs/<id:number>/flagged/", views.flagged_list, name="qc-flagged"),
    path("b/<slug:slug>/qc/runs/<id:number>/items/<id:item_id>/", views.adjudicate, name="qc-item"),
    path("b/<slug:slug>/qc/runs/<id:number>/export.<str:fmt>", views.export_run, name="qc-export"),
]
