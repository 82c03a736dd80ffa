"""Refuse to serve on a non-loopback address while protection is off."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from elion.access import is_loopback_host


class Command(BaseCommand):
    help = "Check that the app may bind HOST (loopback only without ELION_OWNER_PASSWORD)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")

    def handle(self, *args: object, host: str, **options: object) -> None:
        if settings.ELION_PROTECTED:
            self.stdout.write(f"Owner password protection is on; binding {host} is allowed.")
            return
        if not is_loopback_host(host):
            raise CommandError(
                f"Refusing to bind {host}: without ELION_OWNER_PASSWORD Elion serves loopback only "
                "(127.0.0.1 or ::1). Set ELION_OWNER_PASSWORD to serve other addresses."
            )
        self.stdout.write(f"No owner password is set: serving loopback only ({host}).")
