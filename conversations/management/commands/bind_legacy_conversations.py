"""Bind legacy (unbound) conversation history to the configured provider, deliberately."""

from __future__ import annotations

from uuid import UUID

from django.core.management.base import BaseCommand, CommandError, CommandParser

from elion.base.errors import ServiceError
from transcript.provider.legacy_binding import legacy_conversations_bind


class Command(BaseCommand):
    help = (
        "Record provider PROVIDER's binding (type, model, route fingerprint) on messages that have none, so "
        "legacy conversations can be replayed again. Refuses an unknown provider id and conversations whose "
        "other rows are bound to another route."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--provider", required=True, help="Provider id; must be the configured ELION_PROVIDER_ID.")
        parser.add_argument("--conversation", action="append", default=[], help="Only this conversation (repeatable).")
        parser.add_argument("--dry-run", action="store_true", help="Report what would be bound; write nothing.")

    def handle(self, *args: object, provider: str, conversation: list[str], dry_run: bool, **options: object) -> None:
        try:
            ids = [UUID(value) for value in conversation] or None
        except ValueError as exc:
            raise CommandError(f"--conversation must be a UUID: {exc}") from exc
        try:
            report = legacy_conversations_bind(provider_id=provider, conversation_ids=ids, dry_run=dry_run)
        except ServiceError as exc:
            raise CommandError(exc.detail) from exc
        verb = "would bind" if dry_run else "bound"
        for conversation_id, count in report.bound.items():
            self.stdout.write(f"{conversation_id}: {verb} {count} message(s) to provider '{provider}'")
        for conversation_id, reason in report.refused.items():
            self.stdout.write(f"{conversation_id}: refused: {reason}")
        self.stdout.write(
            f"{len(report.bound)} conversation(s) {verb}, {len(report.refused)} refused" + (" (dry run)" if dry_run else "")
        )
        if report.refused and ids:
            raise CommandError("Some named conversations were not bound; see above.")
