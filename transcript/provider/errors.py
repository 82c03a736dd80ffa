"""Provider failures mapped to errors a person can read, the key scrubbed from every message."""

from __future__ import annotations

import openai

from elion.base.redaction import redact_secret
from transcript.provider.events import ProviderError


def stream_ended_early_error() -> ProviderError:
    """The error for a reply stream that ended before the provider said the turn was done."""
    return ProviderError("provider_connection_lost", "The model provider's stream ended before the reply finished.")


def scrubbed_message(value: object, api_key: str | None) -> str:
    """A provider's message (`value.message`, else `value`) fit to show: the key scrubbed, at most 200 characters.

    Provider messages may quote (part of) the key; scrub before showing them (and before clipping)."""
    text = str(getattr(value, "message", None) or value)
    return redact_secret(text, api_key)[:200].rstrip(".")


# The provider's code for a reasoning item it cannot decrypt (another key or model produced it).
REASONING_REJECTED_CODE = "invalid_encrypted_content"


def provider_error_from(exc: openai.APIError, api_key: str) -> ProviderError:
    """The readable ProviderError for an SDK error: a stable code by kind and HTTP status, the key scrubbed."""
    if isinstance(exc, openai.APITimeoutError):  # subclass of APIConnectionError: check first
        return ProviderError("provider_timeout", "The model provider did not answer in time.")
    if isinstance(exc, openai.APIConnectionError):
        return ProviderError("provider_connection_lost", "The connection to the model provider was lost.")
    if not isinstance(exc, openai.APIStatusError):
        detail = f"The model provider reported an error: {scrubbed_message(exc, api_key)}."
        return ProviderError("provider_http_error", detail)
    status = exc.status_code
    error_code = exc.body.get("code") if isinstance(exc.body, dict) else None
    if status == 400 and error_code == REASONING_REJECTED_CODE:
        return ProviderError(
            "provider_reasoning_rejected", "The model provider could not verify the reasoning carried from earlier.", status
        )
    if status == 429:
        code, what = "provider_rate_limited", "is rate limiting requests"
    elif status in (401, 403):
        code, what = "provider_auth_failed", "rejected the API credentials"
    elif 400 <= status < 500:
        code, what = "provider_bad_request", "rejected the request"
    else:
        code, what = "provider_http_error", "failed"
    message = exc.body.get("message") if isinstance(exc.body, dict) else None
    detail = f"The model provider {what} (HTTP {status})"
    detail += f": {scrubbed_message(message, api_key)}." if message else "."
    return ProviderError(code, detail, status)
