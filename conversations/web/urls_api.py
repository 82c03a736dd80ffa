from django.urls import path

from conversations.web import api, attachments_api, backup_api, characters_api, usage_api

urlpatterns = [
    path("health/", api.HealthView.as_view(), name="api-health"),
    path("auth/login/", api.LoginView.as_view(), name="api-login"),
    path("settings/", api.SettingsView.as_view(), name="api-settings"),
    path("usage/", usage_api.UsageView.as_view(), name="api-usage"),
    path("backup/", backup_api.BackupView.as_view(), name="api-backup"),
    path("folders/", api.FolderListView.as_view(), name="api-folders"),
    path("folders/<int:folder_id>/", api.FolderDetailView.as_view(), name="api-folder"),
    path("characters/", characters_api.CharacterListView.as_view(), name="api-characters"),
    path("characters/<str:character_id>/", characters_api.CharacterDetailView.as_view(), name="api-character"),
    path("conversations/", api.ConversationListView.as_view(), name="api-conversations"),
    path("deletions/<str:deletion_id>/", api.DeletionReceiptView.as_view(), name="api-deletion"),
    path("conversations/<str:conversation_id>/", api.ConversationDetailView.as_view(), name="api-conversation"),
    path("conversations/<str:conversation_id>/rewind/", api.ConversationRewindView.as_view(), name="api-rewind"),
    path("conversations/<str:conversation_id>/switch/", api.ConversationSwitchView.as_view(), name="api-switch"),
    path("conversations/<str:conversation_id>/fork/", attachments_api.ConversationForkView.as_view(), name="api-fork"),
    path("attachments/", attachments_api.AttachmentUploadView.as_view(), name="api-attachments"),
    path(
        "conversations/<str:conversation_id>/attachments/<str:attachment_id>/",
        attachments_api.AttachmentContentView.as_view(),
        name="api-attachment-content",
    ),
    path("conversations/<str:conversation_id>/export/", api.ConversationExportView.as_view(), name="api-export"),
    path("conversations/<str:conversation_id>/messages/", api.SendView.as_view(), name="api-messages"),
    path(
        "conversations/<str:conversation_id>/messages/<str:message_id>/retry/",
        api.RetryView.as_view(),
        name="api-retry",
    ),
    path(
        "conversations/<str:conversation_id>/messages/<str:message_id>/stream/",
        api.ReplyWatchView.as_view(),
        name="api-reply-stream",
    ),
    path(
        "conversations/<str:conversation_id>/messages/<str:message_id>/stop/",
        api.ReplyStopView.as_view(),
        name="api-reply-stop",
    ),
    path("conversations/<str:conversation_id>/stream/", api.LiveReplyWatchView.as_view(), name="api-live-stream"),
]
