"""Mark replies whose stream lease expired (their process died) as interrupted."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from transcript.leases import streams_interrupt_expired


class Command(BaseCommand):
    help = "Mark streaming replies with an expired lease as interrupted (text kept)."

    def handle(self, *args: object, **options: object) -> None:
        count = streams_interrupt_expired()
        self.stdout.write(f"{count} interrupted")
