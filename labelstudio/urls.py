from django.urls import path

from . import views

urlpatterns = [
    path("b/<slug:slug>/labelstudio/", views.labelstudio_page, name="labelstudio"),
    path("b/<slug:slug>/labelstudio/connection/", views.labelstudio_connection, name="labelstudio-connection"),
    path("b/<slug:slug>/labelstudio/push/", views.labelstudio_push, name="labelstudio-push"),
    path("b/<slug:slug>/labelstudio/<id:link_id>/pull/", views.labelstudio_pull, name="labelstudio-pull"),
    path("b/<slug:slug>/labelstudio/<id:link_id>/unlink/", views.labelstudio_unlink, name="labelstudio-unlink"),
    path("b/<slug:slug>/labelstudio/<id:link_id>/refresh/", views.labelstudio_refresh, name="labelstudio-refresh"),
    path("b/<slug:slug>/labelstudio/<id:link_id>/reviewed/", views.labelstudio_reviewed, name="labelstudio-reviewed"),
    path("b/<slug:slug>/labelstudio/<id:link_id>/decisions/", views.labelstudio_decisions, name="labelstudio-decisions"),
]
