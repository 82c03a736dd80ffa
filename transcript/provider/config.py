"""The configured provider: its route fingerprint and binding, the per-request options, and the pooled SDK client."""

from __future__ import annotations

import asyncio
import hashlib
import weakref
from dataclasses import dataclass
from urllib.parse import urlsplit

import openai
from django.utils.crypto import salted_hmac

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


# One client per (event loop, base_url, key, timeout): reuses the HTTP pool across sends,
# but never shares sockets between loops (async_to_sync / tests each run their own loop,
# and a pooled connection from a closed loop fails). The weak map drops dead loops.
_CLIENTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str, float], openai.AsyncOpenAI]]
_CLIENTS = weakref.WeakKeyDictionary()


def _client(config: ProviderConfig) -> openai.AsyncOpenAI:
    key = (config.base_url or DEFAULT_BASE_URL, config.api_key or "", config.timeout_seconds)
    per_loop = _CLIENTS.setdefault(asyncio.get_running_loop(), {})
    if key not in per_loop:
        # max_retries=0: the caller decides about retries; hidden SDK retries would
        # double-bill and delay error reporting.
        per_loop[key] = openai.AsyncOpenAI(api_key=key[1], base_url=key[0], max_retries=0, timeout=key[2])
    return per_loop[key]


def conversation_cache_key(conversation_id: object) -> str:
    """The conversation's `prompt_cache_key`: stable for all its sends, opaque (a keyed hash, never its id)."""
    return salted_hmac("elion.prompt-cache-key", str(conversation_id)).hexdigest()[:32]
