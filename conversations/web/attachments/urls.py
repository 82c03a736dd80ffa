"""Routes of attachments (API only, under /api/)."""

from django.urls import path

from conversations.web.attachments import api

api_urlpatterns = [
    path("attachments/", api.AttachmentUploadView.as_view(), name="api-attachments"),
    path(
        "conversations/<str:conversation_id>/attachments/<str:attachment_id>/",
        api.AttachmentContentView.as_view(),
        name="api-attachment-content",
    ),
]
