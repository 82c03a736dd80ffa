"""Everything `make run` does before it serves, in one process: each `manage.py` start costs Django's
set-up again (2-3 s of CPU, about 5 s of wall on a busy machine), and there were four.

In order, each step saying what it does as it starts (issue 41, item 10: no silent minute):
1. `check_bind`: refuse a non-loopback host without owner protection;
2. `migrate`;
3. `collect_static_if_changed`: collectstatic only when the static sources changed;
4. `finish_pending_deletions`: permanent deletions a crash interrupted.
"""

from __future__ import annotations

import time

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "check_bind, migrate, collect_static_if_changed, finish_pending_deletions (what make run does first)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")

    def handle(self, *args: object, host: str, **options: object) -> None:
        steps = [
            ("checking the host to serve", lambda: call_command("check_bind", host=host)),
            ("applying database migrations", lambda: call_command("migrate", interactive=False, verbosity=0)),
            ("static files", lambda: call_command("collect_static_if_changed")),
            ("finishing interrupted deletions", lambda: call_command("finish_pending_deletions")),
        ]
        for label, step in steps:
            started = time.monotonic()
            self.stdout.write(f"run: {label}...")
            step()
            if (seconds := time.monotonic() - started) >= 1:
                self.stdout.write(f"run: {label}: done in {seconds:.0f} s")
