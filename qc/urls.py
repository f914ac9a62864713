from django.urls import path

from . import views

urlpatterns = [
    path("qc/import/", views.import_page, name="qc-import"),
    path("b/<slug:slug>/qc/", views.qc_home, name="qc-home"),
    path("b/<slug:slug>/qc/runs/<id:number>/", views.run_detail, name="qc-run"),
    path("b/<slug:slug>/qc/runs/<id:number>/flagged/", views.flagged_list, name="qc-flagged"),
    path("b/<slug:slug>/qc/runs/<id:number>/items/<id:item_id>/", views.adjudicate, name="qc-item"),
    path("b/<slug:slug>/qc/runs/<id:number>/export.tsv", views.export_run, {"fmt": "tsv"}, name="qc-export-tsv"),
    path("b/<slug:slug>/qc/runs/<id:number>/export.jsonl", views.export_run, {"fmt": "jsonl"}, name="qc-export-jsonl"),
    path("b/<slug:slug>/qc/runs/<id:number>/removed.json", views.export_run, {"fmt": "removed"}, name="qc-export-removed"),
]
