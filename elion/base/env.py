"""Typed readers for the environment: the only place settings come from.

Each helper fails loudly on a malformed value (an operator typo should stop the
app, not silently change behaviour), except where the seed asks for a fallback
(`int_or_default`, used for the handoff limits).
"""

from __future__ import annotations

import os
import secrets
from decimal import Decimal, InvalidOperation
from pathlib import Path


class ConfigurationError(RuntimeError):
    """A variable is set to something the app cannot use."""


def text(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def optional_text(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


def boolean(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ConfigurationError(f"{name} must be a boolean (1/0, true/false), got {raw!r}")


def integer(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError as exc:
        raise ConfigurationError(f"{name} must be an integer, got {raw!r}") from exc
    if minimum is not None and value < minimum:
        raise ConfigurationError(f"{name} must be at least {minimum}, got {value}")
    return value


def optional_decimal(name: str, *, minimum: Decimal = Decimal(0)) -> Decimal | None:
    """A finite decimal number (`1.25`), or None when unset; a price, never a float."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        value = Decimal(raw)
    except InvalidOperation as exc:
        raise ConfigurationError(f"{name} must be a decimal number such as 1.25, got {raw!r}") from exc
    if not value.is_finite() or value < minimum:
        raise ConfigurationError(f"{name} must be a finite number of at least {minimum}, got {raw!r}")
    return value


def share(name: str, default: Decimal, *, maximum: Decimal) -> Decimal:
    """A share between 0 and `maximum`, as a fraction (`0.1`) or a percentage (`10%`); `default` when unset."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = Decimal(raw[:-1].strip()) / 100 if raw.endswith("%") else Decimal(raw)
    except InvalidOperation as exc:
        raise ConfigurationError(f"{name} must be a share such as 0.1 or 10%, got {raw!r}") from exc
    if not value.is_finite() or not Decimal(0) <= value <= maximum:
        raise ConfigurationError(f"{name} must be a share from 0 to {maximum}, got {raw!r}")
    return value


def int_or_default(name: str, default: int, *, minimum: int = 1) -> int:
    """Positive integer, or `default` when missing or invalid.

    The continuity seed requires invalid handoff limits to fall back to safe
    defaults instead of making New Chat or Branch creation fail.
    """
    raw = os.environ.get(name, "")
    try:
        value = int(raw.strip())
    except ValueError:
        return default
    return value if value >= minimum else default


def host_list(name: str) -> list[str]:
    """A comma-separated list of host names (lower-cased; `.example.com` matches its subdomains)."""
    hosts = [part.strip().lower() for part in text(name).split(",") if part.strip()]
    for host in hosts:
        if host == "*" or "/" in host or ":" in host.strip("[]") and not host.startswith("["):
            raise ConfigurationError(
                f"{name} lists host names without scheme, port or wildcard '*' (e.g. chat.example.org), got {host!r}"
            )
    return hosts


def origin_list(name: str) -> list[str]:
    """A comma-separated list of origins (`https://chat.example.org`, optionally with a port)."""
    origins = [part.strip().rstrip("/") for part in text(name).split(",") if part.strip()]
    for origin in origins:
        scheme, _, rest = origin.partition("://")
        if scheme not in ("http", "https") or not rest or "/" in rest:
            raise ConfigurationError(f"{name} lists origins like https://chat.example.org, got {origin!r}")
    return origins


def choice(name: str, default: str, allowed: set[str]) -> str:
    value = text(name, default)
    if value not in allowed:
        raise ConfigurationError(f"{name} must be one of {sorted(allowed)}, got {value!r}")
    return value


def data_dir() -> Path:
    """ELION_DATA_DIR (default ./var), readable by this user only (0700; an existing one is fixed)."""
    path = Path(text("ELION_DATA_DIR", "./var")).resolve()
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    _restrict(path, 0o700)
    return path


def private_file(path: Path) -> Path:
    """Make `path` (created empty if missing) and its SQLite `-wal`/`-shm` companions readable by this user only.

    SQLite creates its WAL and shared-memory files with the database file's
    mode, so a database created here 0600 keeps them 0600 too.
    """
    path = Path(path)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    for candidate in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        if candidate.exists():
            _restrict(candidate, 0o600)
    return path


def _restrict(path: Path, mode: int) -> None:
    try:
        if path.stat().st_mode & 0o777 != mode:
            path.chmod(mode)
    except PermissionError:
        pass  # not ours to change (a shared mount); the owner of the path decides


def secret_key(directory: Path) -> str:
    """DJANGO_SECRET_KEY, or a key generated once and kept in the data dir."""
    configured = optional_text("DJANGO_SECRET_KEY")
    if configured:
        return configured
    key_file = directory / "secret_key"
    if key_file.exists():
        _restrict(key_file, 0o600)
        return key_file.read_text().strip()
    key = secrets.token_urlsafe(50)
    # Created 0600 (never readable by others, not even for a moment), then renamed into place
    # so two processes starting together never read half a key.
    tmp = key_file.with_suffix(f".tmp{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(key)
    os.replace(tmp, key_file)
    return key_file.read_text().strip()


def secret_text(name: str) -> str:
    """A passphrase as given: leading and trailing spaces are part of it."""
    return os.environ.get(name, "")
