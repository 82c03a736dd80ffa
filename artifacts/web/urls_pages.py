from django.urls import path

from artifacts.web import views

urlpatterns = [
    path("", views.artifacts_page, name="artifacts"),
    path("<str:artifact_id>/", views.artifact_page, name="artifact"),
    path("<str:artifact_id>/download/", views.artifact_download, name="artifact-download"),
    path("<str:artifact_id>/delete/", views.artifact_delete_page, name="artifact-delete"),
]
