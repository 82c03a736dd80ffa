"""Write the full backup zip to a file (the same zip as `GET /api/backup/`); `--encrypt`: age-encrypted with the
configured ELION_BACKUP_PASSPHRASE or ELION_BACKUP_RECIPIENTS (operations.backup.encryption)."""

from __future__ import annotations

import os
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from operations.backup import encryption
from operations.backup.writing import backup_chunks


class Command(BaseCommand):
    help = (
        "Write one zip holding every conversation, memory, setting, folder, character, continuity row, archive "
        "document, Library file and attachment blob, with a manifest of counts and sha256s (README, Backup and "
        "restore). Streamed: memory stays bounded whatever the instance's size."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", required=True, help="Path of the zip to write (not overwritten if it exists).")
        parser.add_argument(
            "--encrypt", action="store_true",
            help="Encrypt it with age to ELION_BACKUP_RECIPIENTS and/or ELION_BACKUP_PASSPHRASE (streamed).",
        )

    def handle(self, *args: object, output: str, encrypt: bool = False, **options: object) -> None:
        target = Path(output)
        keys = encryption.configured_keys()
        if encrypt and not keys.configured:
            raise CommandError("--encrypt needs ELION_BACKUP_PASSPHRASE or ELION_BACKUP_RECIPIENTS.")
        if target.exists():
            raise CommandError(f"{target} already exists; choose another --output.")
        partial = target.with_name(target.name + ".partial")
        size = 0
        try:
            with partial.open("xb") as out:
                if encrypt:
                    encryption.encrypt_stream(backup_chunks(), out, keys)
                else:
                    for chunk in backup_chunks():
                        out.write(chunk)
                out.flush()
                size = out.tell()
                os.fsync(out.fileno())
            partial.rename(target)
        except encryption.BackupKeyProblem as exc:
            raise CommandError(str(exc)) from exc
        except FileExistsError as exc:
            raise CommandError(f"{partial} exists (another backup running?); remove it and retry.") from exc
        except OSError as exc:
            partial.unlink(missing_ok=True)
            raise CommandError(f"Could not write {target}: {exc}") from exc
        finally:
            if partial.exists() and not target.exists():
                partial.unlink(missing_ok=True)
        state = "encrypted" if encrypt else "unencrypted"
        self.stdout.write(f"Backup written to {target} ({size} bytes, {state})")
