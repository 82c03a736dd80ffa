"""Typed readers for the environment: the only place settings come from.

Each helper fails loudly on a malformed value (an operator typo should stop the
app, not silently change behaviour), except where the seed asks for a fallback
(`int_or_default`, used for the handoff limits).
"""

from __future__ import annotations

import os
import secrets
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


def choice(name: str, default: str, allowed: set[str]) -> str:
    value = text(name, default)
    if value not in allowed:
        raise ConfigurationError(f"{name} must be one of {sorted(allowed)}, got {value!r}")
    return value


def data_dir() -> Path:
    path = Path(text("ELION_DATA_DIR", "./var")).resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


def secret_key(directory: Path) -> str:
    """DJANGO_SECRET_KEY, or a key generated once and kept in the data dir."""
    configured = optional_text("DJANGO_SECRET_KEY")
    if configured:
        return configured
    key_file = directory / "secret_key"
    if key_file.exists():
        return key_file.read_text().strip()
    key = secrets.token_urlsafe(50)
    # Write then rename so two processes starting together never read half a key.
    tmp = key_file.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(key)
    tmp.chmod(0o600)
    os.replace(tmp, key_file)
    return key_file.read_text().strip()
