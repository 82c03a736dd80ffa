"""Give legacy threads (no snapshot record) a one-time snapshot marked `legacy`."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandParser

from memories.services.snapshots import BACKFILL_BATCH_SIZE, snapshots_backfill_legacy


class Command(BaseCommand):
    help = (
        "Capture the current eligible memory set for every conversation without a snapshot record, "
        "marked legacy with no capture time. Running it again changes nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--batch-size", type=int, default=BACKFILL_BATCH_SIZE)

    def handle(self, *args: object, batch_size: int, **options: object) -> None:
        count = snapshots_backfill_legacy(batch_size=max(batch_size, 1))
        self.stdout.write(f"Backfilled {count} legacy conversation snapshot(s).")
