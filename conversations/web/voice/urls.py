"""Routes of voice (API only, under /api/)."""

from django.urls import path

from conversations.web.voice import api

api_urlpatterns = [
    path("transcriptions/", api.TranscriptionView.as_view(), name="api-transcriptions"),
]
