from django.urls import path

from . import views

urlpatterns = [
    path("jobs/", views.job_list, name="job-list"),
    path("jobs/<id:job_id>/", views.job_detail, name="job-detail"),
    path("jobs/<id:job_id>/progress/", views.job_progress, name="job-progress"),
]
