"""Rebuild stale stored prompts in the foreground, in bounded batches (the same service as the jobs)."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from continuity.services.reconciliation import prompts_reconcile, reconciliation_status


class Command(BaseCommand):
    help = (
        "Rebuild stored system prompts whose policy markers are stale, batch by batch, keeping each "
        "conversation's memory-snapshot membership and verbatim handoff. Completion is recorded only "
        "when every candidate succeeded."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--batch-size", type=int, default=None,
            help=f"Prompts per batch (default ELION_RECONCILE_BATCH_SIZE, {settings.ELION_RECONCILE_BATCH_SIZE}).",
        )
        parser.add_argument(
            "--retry-failed", action="store_true",
            help="Retry failed prompts now, even those backing off or out of attempts.",
        )

    def handle(self, *args: object, batch_size: int | None, retry_failed: bool, **options: object) -> None:
        if batch_size is not None and batch_size < 1:
            raise CommandError("--batch-size must be at least 1.")
        result = prompts_reconcile(batch_size=batch_size, retry_failed=retry_failed)
        status = reconciliation_status()
        self.stdout.write(f"Rebuilt {len(result.rebuilt)} stored prompt(s); {len(result.failed)} attempt(s) failed.")
        if status.completed:
            self.stdout.write("Reconciliation completed for the current policy version.")
            return
        self.stdout.write(
            f"Reconciliation not completed: {status.pending} prompt(s) pending, "
            f"{status.remaining_failures} remaining failure(s)."
        )
        if status.remaining_failures:
            raise CommandError(f"{status.remaining_failures} stored prompt(s) could not be rebuilt.", returncode=2)
