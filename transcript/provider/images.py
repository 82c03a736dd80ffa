"""One image from the Images API on the conversation's own binding."""

from __future__ import annotations

from dataclasses import dataclass

import openai

from transcript.provider.config import ProviderConfig
from transcript.provider.errors import provider_error_from, scrubbed_message
from transcript.provider.events import ProviderError
from transcript.provider.request_builder import image_request, provider_call


@dataclass(frozen=True)
class GeneratedImage:
    """What the Images API answered for one image: its base64 (None when it sent none) and revised prompt."""

    b64: str | None
    revised_prompt: str


# The provider's codes for an image prompt (or image) its content policy refuses.
IMAGE_REFUSED_CODES = frozenset({"moderation_blocked", "content_policy_violation", "content_filter"})


async def image_generate(config: ProviderConfig, *, prompt: str, model: str) -> GeneratedImage:
    """One image from the Images API (`images.generate`) on the conversation's own binding
    (the same base URL, key and client as its replies); raises ProviderError on any failure,
    `image_refused` when the provider's content policy refused it."""
    if not config.api_key:
        raise ProviderError(
            "image_generation_unavailable", "Images need a model provider; none is configured (offline demo)."
        )
    try:
        answer = await provider_call(config, image_request(prompt=prompt, model=model))
    except openai.APIError as exc:
        raise _map_image_error(exc, config.api_key) from exc
    data = answer.data or []
    if not data:
        raise ProviderError("image_missing", "The model provider answered without an image.")
    first = data[0]
    return GeneratedImage(b64=first.b64_json or None, revised_prompt=first.revised_prompt or "")


def _map_image_error(exc: openai.APIError, api_key: str) -> ProviderError:
    body = exc.body if isinstance(exc, openai.APIStatusError) and isinstance(exc.body, dict) else {}
    if _status_of(exc) == 400 and body.get("code") in IMAGE_REFUSED_CODES:
        message = body.get("message")
        detail = "The model provider refused to make this image (content policy)"
        detail += f": {scrubbed_message(message, api_key)}." if message else "."
        return ProviderError("image_refused", detail, 400)
    return provider_error_from(exc, api_key)


def _status_of(exc: openai.APIError) -> int | None:
    return exc.status_code if isinstance(exc, openai.APIStatusError) else None
