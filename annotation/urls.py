from django.urls import path

from . import views

urlpatterns = [
    path("b/<slug:slug>/items/", views.item_list, name="item-list"),
    path("b/<slug:slug>/items/new/", views.item_new, name="item-new"),
    path("b/<slug:slug>/items/import/", views.import_page, name="item-import"),
    path("b/<slug:slug>/items/image-chip/", views.image_chip, name="item-image-chip"),
    path("b/<slug:slug>/items/image-picker/", views.image_picker, name="item-image-picker"),
    path("b/<slug:slug>/items/<id:item_id>/", views.item_edit, name="item-edit"),
    path("b/<slug:slug>/items/<id:item_id>/save/", views.item_save, name="item-save"),
    path("b/<slug:slug>/items/<id:item_id>/submit/", views.item_submit, name="item-submit"),
    path("b/<slug:slug>/items/<id:item_id>/withdraw/", views.item_withdraw, name="item-withdraw"),
    path("b/<slug:slug>/items/<id:item_id>/history/", views.item_history, name="item-history"),
    path("b/<slug:slug>/queue/", views.queue, name="queue"),
    path("b/<slug:slug>/queue/next/", views.queue_next, name="queue-next"),
    path("b/<slug:slug>/queue/<id:assignment_id>/", views.queue_open, name="queue-open"),
    path("b/<slug:slug>/assign/", views.assign, name="assign"),
]
