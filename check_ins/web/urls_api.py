"""Routes of check-ins under /api/ (the pages are Settings → Check-ins)."""

from django.urls import path

from check_ins.web import api

urlpatterns = [
    path("check-ins/", api.CheckInListView.as_view(), name="api-check-ins"),
    path("check-ins/<str:check_in_id>/", api.CheckInDetailView.as_view(), name="api-check-in"),
    path("check-ins/<str:check_in_id>/run/", api.CheckInRunView.as_view(), name="api-check-in-run"),
]
