"""Routes of backup: the download (under /api/) and the Settings -> Restore pages (under /)."""

from django.urls import path

from conversations.web.backup import api, pages, restore_api, restore_pages

api_urlpatterns = [
    path("backup/", api.BackupView.as_view(), name="api-backup"),
    path("backups/", api.BackupsView.as_view(), name="api-backups"),
    path("backups/<uuid:backup_id>/verify/", api.BackupVerifyView.as_view(), name="api-backup-verify"),
    path("backups/<uuid:backup_id>/download/", api.BackupDownloadView.as_view(), name="api-backup-download"),
    path("backups/<uuid:backup_id>/restore/", restore_api.BackupRestoreView.as_view(), name="api-backup-restore"),
    path("restores/<uuid:run_id>/", restore_api.RestoreRunView.as_view(), name="api-restore-run"),
]

page_urlpatterns = [
    path("settings/backups/", pages.backups_page, name="settings-backups"),
    path("settings/backups/now/", pages.backups_now, name="settings-backups-now"),
    path("settings/backups/<uuid:backup_id>/verify/", pages.backup_verify_again, name="settings-backup-verify"),
    path("settings/backups/<uuid:backup_id>/restore/", restore_pages.backup_restore_page, name="settings-backup-restore"),
    path("settings/restores/<uuid:run_id>/", restore_pages.restore_run_page, name="settings-restore-run"),
    path("settings/restore/", pages.restore_page, name="settings-restore"),
    path("settings/restore/<str:token>/", pages.restore_confirm, name="settings-restore-confirm"),
]
