"""Restore a backup zip into an empty database and data dir."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from operations.backup.restoring import BackupRefused, backup_restore


class Command(BaseCommand):
    help = (
        "Restore a backup made by `manage.py backup` or Settings -> Download backup into a freshly migrated, "
        "empty database and an empty data dir. Every member is checked against the manifest first; nothing is "
        "written unless the whole backup checks out."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="The backup zip.")

    def handle(self, *args: object, path: str, **options: object) -> None:
        try:
            report = backup_restore(Path(path))
        except BackupRefused as exc:
            raise CommandError(f"Restore refused: {exc}") from exc
        rows = sum(report.rows.values())
        self.stdout.write(f"Restored {rows} rows of {len(report.rows)} models and {report.blobs} blobs from {path}")
        for label, count in report.rows.items():
            self.stdout.write(f"  {label}: {count}")
        for name in report.damaged_blobs:
            self.stdout.write(f"  not restored (damaged before the backup was made): {name}")
