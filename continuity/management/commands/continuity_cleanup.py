"""Continuity Cleanup from the shell: a count-only preview, or the guarded deletion."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError, CommandParser

from continuity.services.cleanup import CONFIRMATION_PHRASE, continuity_cleanup_delete, continuity_cleanup_preview
from elion.base.errors import ServiceError


class Command(BaseCommand):
    help = (
        "Remove retired generated-summary rows (no verbatim handoff). --preview prints counts and the scope "
        f'token; --delete needs that token, --backup-verified and --confirm "{CONFIRMATION_PHRASE}".'
    )

    def add_arguments(self, parser: CommandParser) -> None:
        mode = parser.add_mutually_exclusive_group(required=True)
        mode.add_argument("--preview", action="store_true")
        mode.add_argument("--delete", action="store_true")
        parser.add_argument("--scope-token", default=None)
        parser.add_argument("--backup-verified", action="store_true")
        parser.add_argument("--confirm", default=None)

    def handle(self, *args: object, preview: bool, delete: bool, scope_token: str | None, backup_verified: bool, confirm: str | None, **options: object) -> None:
        try:
            if preview:
                self.stdout.write(json.dumps(continuity_cleanup_preview().as_dict(), indent=2))
                return
            removed = continuity_cleanup_delete(
                scope_token=scope_token, backup_verified=backup_verified, confirmation=confirm
            )
        except ServiceError as exc:
            raise CommandError(f"{exc.code}: {exc.detail}") from exc
        self.stdout.write(json.dumps({"removed": removed}))
