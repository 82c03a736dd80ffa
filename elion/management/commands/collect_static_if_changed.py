"""`collectstatic`, only when the static sources changed since the last collect (`make run` starts with it).

Every start used to collect again: 14-16 s of CPU, a minute's wall on a busy machine (issue 41, item 5).
The sources' fingerprint is every file the static finders list (its path, size and modification time),
the storage's own module (its rewrite rules decide the output) and the versions of Django and
WhiteNoise. It is kept beside the collected files (`STATIC_ROOT/.sources.sha256`); a matching
fingerprint and a present manifest skip the collect. A collect clears STATIC_ROOT first, so the
served set is exactly the current sources (no hashed leftovers of older versions).
"""

from __future__ import annotations

import hashlib
import inspect
from importlib.metadata import version
from pathlib import Path

from django.apps import apps
from django.conf import settings
from django.contrib.staticfiles.finders import get_finders
from django.core.files.storage import storages
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

STAMP_NAME = ".sources.sha256"


def sources_fingerprint() -> tuple[str, int]:
    """(fingerprint, file count) of what collectstatic would read now."""
    ignore = apps.get_app_config("staticfiles").ignore_patterns
    entries = []
    for finder in get_finders():
        for path, storage in finder.list(ignore):
            stat = Path(storage.path(path)).stat()
            prefix = getattr(storage, "prefix", None) or ""
            entries.append(f"{prefix}/{path}\0{stat.st_size}\0{stat.st_mtime_ns}")
    digest = hashlib.sha256()
    for entry in sorted(entries):
        digest.update(entry.encode() + b"\n")
    # The storage's module (its rewrite rules), its settings and the packages whose code writes the output.
    digest.update(inspect.getsource(inspect.getmodule(type(storages["staticfiles"]))).encode())
    digest.update(repr(settings.STORAGES["staticfiles"]).encode())
    digest.update(f"django {version('django')} whitenoise {version('whitenoise')}".encode())
    return digest.hexdigest(), len(entries)


class Command(BaseCommand):
    help = "Run collectstatic when the static sources changed since the last collect (else do nothing)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--force", action="store_true", help="collect even when nothing changed")

    def handle(self, *args: object, force: bool = False, **options: object) -> None:
        root = Path(settings.STATIC_ROOT)
        stamp = root / STAMP_NAME
        fingerprint, count = sources_fingerprint()
        manifest_name = getattr(storages["staticfiles"], "manifest_name", None)
        manifest_present = manifest_name is None or (root / manifest_name).exists()
        if not force and manifest_present and stamp.exists() and stamp.read_text().strip() == fingerprint:
            self.stdout.write(f"Static files unchanged ({count} sources): nothing to collect.")
            return
        self.stdout.write(f"Collecting static files ({count} sources changed or never collected)...")
        stamp.unlink(missing_ok=True)  # a collect that fails half-way must not look complete
        call_command("collectstatic", interactive=False, clear=True, verbosity=0)
        stamp.write_text(fingerprint + "\n")
        self.stdout.write("Static files collected.")
