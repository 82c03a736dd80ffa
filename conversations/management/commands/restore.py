"""Restore a backup (a zip, or an age-encrypted backup) into an empty database and data dir."""

from __future__ import annotations

import tempfile
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from operations.backup import encryption, replacing
from operations.backup.restoring import BackupRefused, backup_restore


class Command(BaseCommand):
    help = (
        "Restore a backup made by `manage.py backup` or Settings -> Download backup into a freshly migrated, "
        "empty database and an empty data dir. Every member is checked against the manifest first; nothing is "
        "written unless the whole backup checks out."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="The backup: a zip, or an age-encrypted backup (.zip.age).")
        parser.add_argument(
            "--replace", action="store_true",
            help="Restore over this instance's data: its current state is backed up and verified first, then every "
            "row is replaced in one transaction (docs/operations.md).",
        )
        parser.add_argument(
            "--identity", help="An age identity file (age-keygen) for a backup encrypted to ELION_BACKUP_RECIPIENTS; "
            "a passphrase-encrypted one is opened with ELION_BACKUP_PASSPHRASE.",
        )

    def handle(
        self, *args: object, path: str, identity: str | None = None, replace: bool = False, **options: object
    ) -> None:
        source = Path(path)
        self._replace = replace
        try:
            if not source.is_file():
                raise BackupRefused(f"{source} is no file.")
            if encryption.file_kind(source) == "zip":
                report = self._restore(source)
            else:
                identities = encryption.identities_from_file(Path(identity)) if identity else []
                staging = Path(settings.ELION_BACKUP_STAGING_DIR)
                staging.mkdir(parents=True, exist_ok=True, mode=0o700)
                with tempfile.TemporaryDirectory(dir=staging) as work:
                    opened = Path(work) / "opened.zip"
                    encryption.decrypt_file(
                        source, opened, passphrase=encryption.configured_keys().passphrase, identities=identities
                    )
                    report = self._restore(opened)
        except BackupRefused as exc:
            raise CommandError(f"Restore refused: {exc}") from exc
        rows = sum(report.rows.values())
        self.stdout.write(f"Restored {rows} rows of {len(report.rows)} models and {report.blobs} blobs from {path}")
        for label, count in report.rows.items():
            self.stdout.write(f"  {label}: {count}")
        for name in report.damaged_blobs:
            self.stdout.write(f"  not restored (damaged before the backup was made): {name}")

    def _step(self, step: str) -> None:
        self.stdout.write(f"step: {step}")
        self.stdout.flush()

    def _restore(self, zip_path: Path):  # noqa: ANN202 - a RestoreReport
        if not self._replace:
            return backup_restore(zip_path)
        report, safety = replacing.backup_restore_replace(zip_path, self._step)
        self.stdout.write(f"The state before the restore was backed up and verified: {safety}")
        return report
