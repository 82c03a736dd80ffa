"""The configured provider: its route and the binding recorded on every durable message."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from urllib.parse import urlsplit

DEFAULT_BASE_URL = "https://api.openai.com/v1"
OFFLINE_ROUTE = "offline-demo"
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class ProviderBinding:
    """Recorded on every durable message: which provider/route produced it."""

    provider_id: str
    provider_type: str
    model: str
    route_fingerprint: str


@dataclass(frozen=True)
class ProviderConfig:
    provider_id: str  # e.g. "openai"
    api_selector: str  # "responses" | "chat.completions"
    model: str  # logical model, e.g. "gpt-5.5"
    base_url: str | None  # None → DEFAULT_BASE_URL
    api_key: str | None  # None/"" → offline demo provider
    deployment: str = ""  # e.g. an Azure-style deployment name; part of the route
    timeout_seconds: float = 120.0

    @property
    def provider_type(self) -> str:
        return "openai" if self.api_key else "offline-demo"

    def binding(self) -> ProviderBinding:
        if self.api_key:
            fingerprint = route_fingerprint(self.base_url, self.deployment, self.api_selector)
        else:
            fingerprint = _digest(OFFLINE_ROUTE)
        return ProviderBinding(self.provider_id, self.provider_type, self.model, fingerprint)


def normalise_route(base_url: str | None) -> str:
    """Canonical form of a base URL, so cosmetic differences don't change the route."""
    parts = urlsplit((base_url or DEFAULT_BASE_URL).strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()  # hostname already drops userinfo
    if ":" in host:
        host = f"[{host}]"  # IPv6 literal
    port = parts.port
    netloc = host if port is None or port == _DEFAULT_PORTS.get(scheme) else f"{host}:{port}"
    return f"{scheme}://{netloc}{parts.path.rstrip('/')}"  # query/fragment dropped


def route_fingerprint(base_url: str | None, deployment: str, api_selector: str) -> str:
    """Identify where requests go. Never includes the key, so rotating it keeps the binding."""
    return _digest("\n".join((normalise_route(base_url), deployment.strip(), api_selector)))


def _digest(route: str) -> str:
    return hashlib.sha256(route.encode()).hexdigest()[:32]
