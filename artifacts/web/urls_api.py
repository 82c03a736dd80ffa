from django.urls import path

from artifacts.web import api

urlpatterns = [
    path("artifacts/", api.ArtifactListView.as_view(), name="api-artifacts"),
    path("artifacts/<str:artifact_id>/", api.ArtifactDetailView.as_view(), name="api-artifact"),
]
