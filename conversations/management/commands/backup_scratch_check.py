"""Run by a backup's verification in a child process: migrate this (scratch) instance, restore, compare.

Not for the owner: `operations.backup.verification` starts it with a scratch
database and data dir as this process's only ones, and reads the report.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from operations.backup.refusals import BackupRefused
from operations.backup.verification import VerificationFailed, restored_instance_check


class Command(BaseCommand):
    help = "Internal (backup verification): migrate this empty instance, restore the backup zip, compare."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path")
        parser.add_argument("--report", required=True)

    def handle(self, *args: object, path: str, report: str, **options: object) -> None:
        try:
            call_command("migrate", interactive=False, verbosity=0)
        except Exception as exc:  # noqa: BLE001 - any failure of a migration is the finding
            Path(report).write_text(json.dumps({"failure": f"The migrations do not apply: {exc}"}))
            return
        try:
            counts = restored_instance_check(Path(path))
        except (BackupRefused, VerificationFailed) as exc:
            Path(report).write_text(json.dumps({"failure": str(exc)}))
            return
        Path(report).write_text(json.dumps({"counts": counts}))
