"""Refuse to serve on a non-loopback address while protection is off."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from elion.base.access import is_loopback_host


class Command(BaseCommand):
    help = "Check that the app may bind HOST (loopback only without ELION_OWNER_PASSWORD)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")

    def handle(self, *args: object, host: str, **options: object) -> None:
        if settings.ELION_PROTECTED:
            if not is_loopback_host(host) and not settings.ELION_ALLOWED_HOSTS:
                raise CommandError(
                    f"Refusing to bind {host}: only loopback host names are served until ELION_ALLOWED_HOSTS "
                    "lists the names (or addresses) clients will use, e.g. ELION_ALLOWED_HOSTS=chat.example.org."
                )
            if not is_loopback_host(host) and not settings.ELION_BEHIND_TLS_PROXY:
                # Allowed (a trusted LAN is the owner's call), but the password and cookies cross it in clear.
                self.stderr.write(
                    f"Warning: serving {host} over plain HTTP: the owner password and session cookies travel "
                    "unencrypted. Put a TLS proxy in front and set ELION_BEHIND_TLS_PROXY=1 (README, "
                    "\"Serving on a network\")."
                )
            self.stdout.write(f"Owner password protection is on; binding {host} is allowed.")
            return
        if not is_loopback_host(host):
            raise CommandError(
                f"Refusing to bind {host}: without ELION_OWNER_PASSWORD Elion serves loopback only "
                "(127.0.0.1 or ::1). Set ELION_OWNER_PASSWORD to serve other addresses."
            )
        self.stdout.write(f"No owner password is set: serving loopback only ({host}).")
