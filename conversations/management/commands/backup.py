"""Write the full backup zip to a file (the same zip as `GET /api/backup/`)."""

from __future__ import annotations

import os
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from operations.backup.writing import backup_chunks


class Command(BaseCommand):
    help = (
        "Write one zip holding every conversation, memory, setting, folder, character, continuity row, archive "
        "document, Library file and attachment blob, with a manifest of counts and sha256s (README, Backup and "
        "restore). Streamed: memory stays bounded whatever the instance's size."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", required=True, help="Path of the zip to write (not overwritten if it exists).")

    def handle(self, *args: object, output: str, **options: object) -> None:
        target = Path(output)
        if target.exists():
            raise CommandError(f"{target} already exists; choose another --output.")
        partial = target.with_name(target.name + ".partial")
        size = 0
        try:
            with partial.open("xb") as out:
                for chunk in backup_chunks():
                    out.write(chunk)
                    size += len(chunk)
                out.flush()
                os.fsync(out.fileno())
            partial.rename(target)
        except FileExistsError as exc:
            raise CommandError(f"{partial} exists (another backup running?); remove it and retry.") from exc
        except OSError as exc:
            partial.unlink(missing_ok=True)
            raise CommandError(f"Could not write {target}: {exc}") from exc
        finally:
            if partial.exists() and not target.exists():
                partial.unlink(missing_ok=True)
        self.stdout.write(f"Backup written to {target} ({size} bytes)")
