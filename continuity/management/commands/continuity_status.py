"""Report legacy-prompt reconciliation status (the numbers /api/health/ gives)."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandParser

from continuity.services.reconciliation import reconciliation_status


class Command(BaseCommand):
    help = "Show whether stored-prompt reconciliation completed, how many prompts are pending and how many failed."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="Print the health endpoint's reconciliation object.")

    def handle(self, *args: object, **options: object) -> None:
        status = reconciliation_status()
        if options["json"]:
            self.stdout.write(json.dumps(status.as_dict(), sort_keys=True))
            return
        self.stdout.write(f"policy version: {status.policy_version}")
        self.stdout.write(f"completed: {'yes' if status.completed else 'no'}")
        self.stdout.write(f"pending: {status.pending}")
        self.stdout.write(f"remaining failures: {status.remaining_failures}")
