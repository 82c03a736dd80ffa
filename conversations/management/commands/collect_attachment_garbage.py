"""Remove stale uploads and attachment blobs no durable message references."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from transcript.attachments.gc import attachment_garbage_collect


class Command(BaseCommand):
    help = (
        "Remove uploads never sent and blobs no message references, once older than "
        "ELION_ATTACHMENT_GC_GRACE_SECONDS (or --grace-seconds). Referenced blobs are never removed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--grace-seconds", type=int, default=None, help="Override the grace period.")

    def handle(self, *args: object, grace_seconds: int | None = None, **options: object) -> None:
        if grace_seconds is not None and grace_seconds < 0:
            raise CommandError("--grace-seconds must be 0 or more.")
        report = attachment_garbage_collect(grace_seconds=grace_seconds)
        self.stdout.write(
            f"{report.uploads_removed} stale uploads, {report.orphan_rows_removed} orphaned attachments, "
            f"{report.blobs_removed} blobs, {report.temp_files_removed} temporary files removed"
        )
