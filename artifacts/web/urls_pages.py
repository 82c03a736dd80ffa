from django.urls import path

from artifacts.web import pages

urlpatterns = [
    path("", pages.artifacts_page, name="artifacts"),
    path("<str:artifact_id>/", pages.artifact_page, name="artifact"),
    path("<str:artifact_id>/download/", pages.artifact_download, name="artifact-download"),
    path("<str:artifact_id>/delete/", pages.artifact_delete_page, name="artifact-delete"),
]
