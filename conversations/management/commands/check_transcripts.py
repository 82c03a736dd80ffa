"""Report (and with --repair, fix what is safe) broken transcript invariants."""

from __future__ import annotations

from uuid import UUID

from django.core.management.base import BaseCommand, CommandError, CommandParser

from transcript.attachments.verification import blobs_rehash_all
from transcript.integrity import transcripts_check


class Command(BaseCommand):
    help = (
        "Check every conversation's transcript: orphan parents, parents in another conversation or with a larger "
        "seq, a head outside its conversation, unpaired tool calls, replies streaming past their lease; and "
        "re-hash every attachment blob the manifests reference, whatever its recorded file identity (missing "
        "or tampered blobs are reported, never repaired). --repair fixes what can be fixed safely. "
        "Exits non-zero while problems remain."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--repair", action="store_true")
        parser.add_argument("--conversation", action="append", default=[], help="Only this conversation (repeatable).")

    def handle(self, *args: object, repair: bool, conversation: list[str], **options: object) -> None:
        try:
            ids = [UUID(value) for value in conversation] or None
        except ValueError as exc:
            raise CommandError(f"--conversation must be a UUID: {exc}") from exc
        fixed, remaining = transcripts_check(conversation_ids=ids, repair=repair)
        audit = blobs_rehash_all(conversation_ids=ids)
        for problem in fixed:
            self.stdout.write(f"repaired {problem}")
        for problem in remaining:
            note = "" if problem.repairable else " (needs a person: not repaired automatically)"
            self.stdout.write(f"problem {problem}{note}")
        for finding in audit.findings:
            self.stdout.write(f"problem {finding} (needs a person: restore the file from a backup)")
        self.stdout.write(f"{audit.blobs_hashed} attachment blobs re-hashed ({audit.bytes_hashed:,} bytes)")
        problems = len(remaining) + len(audit.findings)
        self.stdout.write(f"{len(fixed)} repaired, {problems} remaining")
        if problems:
            raise CommandError(f"{problems} transcript problem(s) remain.")
