"""Finish permanent deletions a crash interrupted (run at start by scripts/run.sh)."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from conversations.services.deletion import deletions_finish


class Command(BaseCommand):
    help = "Finish pending permanent conversation deletions whose claim is free or ran out."

    def handle(self, *args: object, **options: object) -> None:
        self.stdout.write(f"{deletions_finish()} deletion(s) finished")
