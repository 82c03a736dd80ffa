"""Routes of backup: the download (under /api/) and the Settings -> Restore pages (under /)."""

from django.urls import path

from conversations.web.backup import api, pages

api_urlpatterns = [
    path("backup/", api.BackupView.as_view(), name="api-backup"),
]

page_urlpatterns = [
    path("settings/restore/", pages.restore_page, name="settings-restore"),
    path("settings/restore/<str:token>/", pages.restore_confirm, name="settings-restore-confirm"),
]
