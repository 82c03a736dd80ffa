"""Backup files encrypted with age (https://age-encryption.org/v1), through `pyrage`, streamed both ways.

`pyrage` binds `rage`, the maintained Rust implementation of age; its
`encrypt_io`/`decrypt_io` read and write file objects chunk by chunk (age's
64 KiB STREAM chunks), so memory stays flat however big the backup. Keys come
from the environment:

- `ELION_BACKUP_RECIPIENTS`: age recipients (`age1…`, or `ssh-ed25519 …`/`ssh-rsa …`),
  separated by commas or new lines. The server holds only public keys: it can
  write backups and never read them back.
- `ELION_BACKUP_PASSPHRASE`: age's passphrase (scrypt) recipient. `pyrage`'s
  passphrase functions take and give whole byte strings, and rage picks
  scrypt's work factor anew on every call to take about a second (measured
  here: 2^15 to 2^19, 32 to 512 MiB, 0.7 to 12 s under load). So a backup is
  not encrypted to the passphrase directly: it is encrypted (streamed) to this
  installation's backup key (an X25519 identity made once, `installation_key`),
  and that key, encrypted with the passphrase, is written first, ASCII-armored.
  The file is two standard age files back to back, opened anywhere with the
  passphrase alone; by hand:
  `sed '/^-----END AGE/q' F | age -d > key; sed '1,/^-----END AGE/d' F | age -d -i key`.
  The data dir keeps the key itself (0600, beside the data it protects, which
  the data dir holds in clear anyway) and a stdlib scrypt digest of the
  passphrase (fixed cost, 32 MiB): a changed passphrase makes a new key.

A file that starts with `PK` is a plain (unencrypted) zip. Wrong keys, a
truncated or altered file all fail age's authentication: `BackupRefused`,
raised before anything is restored.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pyrage
from django.conf import settings

from operations.backup.refusals import BackupRefused

AGE_MAGIC = b"age-encryption.org/v1\n"
ARMOR_BEGIN = b"-----BEGIN AGE ENCRYPTED FILE-----"
ARMOR_END = b"-----END AGE ENCRYPTED FILE-----"
ZIP_MAGIC = b"PK"
_ARMOR_LIMIT = 64 * 1024  # the wrapped key is a few hundred bytes
# The stdlib scrypt of the passphrase check: a fixed cost (2^15 x 8 x 128 B = 32 MiB, about 0.1 s).
SCRYPT_N = 1 << 15


class BackupKeyProblem(ValueError):
    """ELION_BACKUP_RECIPIENTS names something that is no age recipient; the message says which."""


@dataclass(frozen=True)
class BackupKeys:
    passphrase: str = ""
    recipients: tuple[str, ...] = ()

    @property
    def configured(self) -> bool:
        return bool(self.passphrase or self.recipients)

    @property
    def can_decrypt(self) -> bool:
        """The server can read its own backups back only with the passphrase (recipients are public keys)."""
        return bool(self.passphrase)


def configured_keys() -> BackupKeys:
    raw = settings.ELION_BACKUP_RECIPIENTS or ""
    recipients = tuple(part.strip() for part in re.split(r"[,\n]", raw) if part.strip())
    return BackupKeys(passphrase=settings.ELION_BACKUP_PASSPHRASE or "", recipients=recipients)


def parsed_recipients(keys: BackupKeys) -> list:
    found = []
    for text in keys.recipients:
        try:
            if text.startswith("age1"):
                found.append(pyrage.x25519.Recipient.from_str(text))
            elif text.startswith("ssh-"):
                found.append(pyrage.ssh.Recipient.from_str(text))
            else:
                raise ValueError("neither age1… nor ssh-…")
        except (ValueError, pyrage.RecipientError) as exc:
            raise BackupKeyProblem(f"ELION_BACKUP_RECIPIENTS holds {text[:24]!r}…, which is no age recipient ({exc}).") from exc
    return found


class _ChunkReader(io.RawIOBase):
    """A readable file over an iterator of byte chunks (what `encrypt_io` reads from)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        super().__init__()
        self._chunks = chunks
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # noqa: ANN001 - a writable buffer
        while not self._pending:
            self._pending = next(self._chunks, b"")
            if not self._pending:
                return 0
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size


def encrypt_stream(chunks: Iterator[bytes], out: IO[bytes], keys: BackupKeys) -> None:
    """Write `chunks` encrypted to `out` (the layout: the module docstring). Memory: one chunk."""
    recipients = parsed_recipients(keys)
    if keys.passphrase:
        identity, wrapped = installation_key(keys.passphrase)
        out.write(wrapped)
        recipients.append(identity.to_public())
    if not recipients:
        raise BackupKeyProblem("No backup key: set ELION_BACKUP_PASSPHRASE or ELION_BACKUP_RECIPIENTS.")
    pyrage.encrypt_io(io.BufferedReader(_ChunkReader(chunks), 1 << 16), out, recipients)


def file_kind(path: Path) -> str:
    """"zip", "age" (to recipients) or "age+passphrase" (a passphrase-wrapped file key first), else "unknown"."""
    with path.open("rb") as source:
        head = source.read(len(ARMOR_BEGIN))
    if head.startswith(ZIP_MAGIC):
        return "zip"
    if head.startswith(AGE_MAGIC[: len(head)]) and head:
        return "age"
    if head == ARMOR_BEGIN:
        return "age+passphrase"
    return "unknown"


def identities_from_text(text: str, where: str = "The pasted identity") -> list:
    """The age identities (`AGE-SECRET-KEY-1…` lines) of an identity file's text, as `age-keygen` writes it."""
    found = []
    for line in text.splitlines():
        if line.strip().upper().startswith("AGE-SECRET-KEY-"):
            try:
                found.append(pyrage.x25519.Identity.from_str(line.strip().upper()))
            except (ValueError, pyrage.IdentityError) as exc:
                raise BackupRefused(f"{where} holds a key that cannot be read ({exc}).") from exc
    if not found:
        raise BackupRefused(f"{where} holds no age identity (a line AGE-SECRET-KEY-1…).")
    return found


def identities_from_file(path: Path) -> list:
    """The age identities of an identity file (`identities_from_text`)."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise BackupRefused(f"The identity file {path} cannot be read ({exc}).") from exc
    return identities_from_text(text, f"The identity file {path}")


def _key_dir() -> Path:
    return Path(settings.DATA_DIR) / "backup-key"


def _passphrase_digest(passphrase: str, salt: bytes) -> str:
    return hashlib.scrypt(passphrase.encode(), salt=salt, n=SCRYPT_N, r=8, p=1, maxmem=64 << 20).hex()


def installation_key(passphrase: str) -> tuple[object, bytes]:
    """(identity, armored passphrase-wrapped identity) of this installation's backup key; made on first use,
    and made anew when the passphrase changed (older backups keep the old key, wrapped in their own header)."""
    folder = _key_dir()
    identity_file, wrapped_file, check_file = folder / "identity.txt", folder / "wrapped.age", folder / "check.json"
    try:
        check = json.loads(check_file.read_text())
        if hmac.compare_digest(_passphrase_digest(passphrase, bytes.fromhex(check["salt"])), check["digest"]):
            return pyrage.x25519.Identity.from_str(identity_file.read_text().strip()), wrapped_file.read_bytes()
    except (OSError, ValueError, KeyError, pyrage.IdentityError):
        pass
    identity = pyrage.x25519.Identity.generate()
    wrapped = pyrage.passphrase.encrypt(str(identity).encode(), passphrase, armored=True)
    wrapped = wrapped if wrapped.endswith(b"\n") else wrapped + b"\n"
    salt = os.urandom(16)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    for path, data in ((identity_file, str(identity).encode()), (wrapped_file, wrapped),
                       (check_file, json.dumps({"salt": salt.hex(), "digest": _passphrase_digest(passphrase, salt)}).encode())):
        partial = path.with_suffix(".partial")
        partial.write_bytes(data)
        partial.chmod(0o600)
        partial.replace(path)
    return identity, wrapped


def _unwrapped_file_key(source: IO[bytes], passphrase: str, *, required: bool) -> object | None:
    """Read past the armored, passphrase-wrapped file key; the key itself when a passphrase is given (this
    installation's own key without scrypt when the header is its own, else through age's scrypt)."""
    armored = b""
    while len(armored) < _ARMOR_LIMIT:
        line = source.readline()
        if not line:
            break
        armored += line
        if line.strip() == ARMOR_END:
            break
    if not armored.rstrip().endswith(ARMOR_END):
        raise BackupRefused("The backup's passphrase-wrapped key is cut short: the file is truncated or damaged.")
    if not passphrase:
        if not required:
            return None  # the file may also be encrypted to an identity the caller holds
        raise BackupRefused("This backup is encrypted with a passphrase: set ELION_BACKUP_PASSPHRASE to restore it.")
    own_identity, own_wrapped = installation_key(passphrase) if _key_dir().exists() else (None, b"")
    if own_identity is not None and hmac.compare_digest(armored, own_wrapped):
        return own_identity
    try:
        return pyrage.x25519.Identity.from_str(pyrage.passphrase.decrypt(armored, passphrase).decode())
    except (pyrage.DecryptError, ValueError, UnicodeDecodeError) as exc:
        raise BackupRefused("The passphrase does not open this backup (wrong passphrase, or an altered file).") from exc


def decrypt_file(source_path: Path, target_path: Path, *, passphrase: str = "", identities: list | None = None) -> None:
    """Decrypt an encrypted backup to `target_path`, streamed; BackupRefused (and no target) when it cannot be."""
    keys = list(identities or [])
    kind = file_kind(source_path)
    if kind not in ("age", "age+passphrase"):
        raise BackupRefused(f"{source_path.name} is neither a backup zip nor an age-encrypted backup.")
    try:
        with source_path.open("rb") as source, target_path.open("wb") as target:
            if kind == "age+passphrase":
                file_key = _unwrapped_file_key(source, passphrase, required=not keys)
                if file_key is not None:
                    keys.append(file_key)
            if not keys:
                raise BackupRefused(
                    "This backup is encrypted to age recipients: give the matching identity (--identity FILE)."
                )
            try:
                pyrage.decrypt_io(source, target, keys)
            except (pyrage.DecryptError, OSError) as exc:  # rage reports a cut-short stream as an I/O error
                raise BackupRefused(
                    f"The backup cannot be decrypted ({exc}): a wrong key, or a truncated or altered file."
                ) from exc
    except BaseException:
        target_path.unlink(missing_ok=True)
        raise
