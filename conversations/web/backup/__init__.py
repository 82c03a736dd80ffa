"""Backup: downloading the backup (API) and restoring one (the Settings -> Restore pages)."""
