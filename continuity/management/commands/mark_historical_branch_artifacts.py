from django.core.management.base import BaseCommand, CommandParser

from continuity.services.branch_history import historical_branch_artifacts_mark


class Command(BaseCommand):
    help = (
        "Mark historical Branch / Fresh Chat seed bubbles as handoff artifacts, only where the "
        "conversation's branch provenance identifies an assistant seed as its earliest remaining message."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="Count what would be marked; change nothing.")

    def handle(self, *args: object, dry_run: bool = False, **options: object) -> None:
        count = historical_branch_artifacts_mark(dry_run=dry_run)
        verb = "would be marked" if dry_run else "marked"
        self.stdout.write(f"{count} historical branch bubble(s) {verb}.")
