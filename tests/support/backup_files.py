"""Reading and rewriting a backup zip's members in tests."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

from operations.backup.writing import backup_chunks


def backup_file(tmp_path: Path, name: str = "backup.zip") -> Path:
    path = tmp_path / name
    path.write_bytes(b"".join(backup_chunks()))
    return path


def members_of(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def rewritten(path: Path, members: dict[str, bytes], *, reseal: bool = False) -> Path:
    """The same backup with some members replaced; `reseal` recomputes manifest.sha256 over the manifest given."""
    if reseal:
        members = {**members, "manifest.sha256": hashlib.sha256(members["manifest.json"]).hexdigest().encode() + b"\n"}
    target = path.with_name("tampered-" + path.name)
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return target
