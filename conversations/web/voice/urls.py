"""Routes of voice (API only, under /api/)."""

from django.urls import path

from conversations.web.voice import api, pages, speech_api

api_urlpatterns = [
    path("transcriptions/", api.TranscriptionView.as_view(), name="api-transcriptions"),
    path("voices/", speech_api.VoicesView.as_view(), name="api-voices"),
    path("voices/<str:voice>/preview/", speech_api.VoicePreviewView.as_view(), name="api-voice-preview"),
    path(
        "conversations/<str:conversation_id>/messages/<str:message_id>/speech/",
        speech_api.MessageSpeechView.as_view(),
        name="api-message-speech",
    ),
    path(
        "conversations/<str:conversation_id>/messages/<str:message_id>/speech/segments/",
        speech_api.MessageSpeechSegmentsView.as_view(),
        name="api-message-speech-segments",
    ),
]

page_urlpatterns = [
    path("settings/voice/", pages.voice_settings_save, name="settings-voice"),
]
