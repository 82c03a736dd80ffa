"""Routes of artifacts: the API (served under /api/) and the pages (served under /artifacts/)."""

from django.urls import path

from artifacts.web import api, pages

api_urlpatterns = [
    path("artifacts/", api.ArtifactListView.as_view(), name="api-artifacts"),
    path("artifacts/<str:artifact_id>/", api.ArtifactDetailView.as_view(), name="api-artifact"),
]

page_urlpatterns = [
    path("", pages.artifacts_page, name="artifacts"),
    path("<str:artifact_id>/", pages.artifact_page, name="artifact"),
    path("<str:artifact_id>/download/", pages.artifact_download, name="artifact-download"),
    path("<str:artifact_id>/delete/", pages.artifact_delete_page, name="artifact-delete"),
]
