"""The neutral events a model turn streams as, and the one error a provider failure becomes; `usage_detail`
reads the usage figures `Completed` carries from the SDK's usage objects (both adapters')."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ToolCallRequested:
    call_id: str
    name: str
    arguments_json: str
    item_id: str = ""  # the Responses `function_call` item's own id (`fc_…`), replayed with it; "" on Chat


@dataclass(frozen=True)
class ReasoningSummaryDelta:
    """A piece of the provider's summary of its reasoning, streamed before the reply (never speech)."""

    text: str


@dataclass(frozen=True)
class ReasoningDone:
    """One finished reasoning output item: opaque encrypted content (None when the provider sent none)
    and its summary texts. Carried back, in its place, in later requests (`reasoning_message`)."""

    item_id: str
    encrypted_content: str | None
    summary: tuple[str, ...]


@dataclass(frozen=True)
class CitationFound:
    """A `url_citation` annotation; `start`/`end` are offsets into the text this request streamed."""

    url: str
    title: str
    start: int
    end: int


@dataclass(frozen=True)
class RefusalDelta:
    """A piece of a `refusal` content part: the model declined, and says so in these words."""

    text: str


@dataclass(frozen=True)
class OutputItemDone:
    """One finished Responses output item kept verbatim for replay (`message`, `web_search_call`):
    the provider's own JSON of it, in the order it came."""

    item: dict[str, Any]


@dataclass(frozen=True)
class Completed:
    """The turn ended; the provider's own usage figures (None where it reported none).

    `incomplete_reason`: the provider cut the reply off (Responses `incomplete_details.reason`,
    Chat Completions `finish_reason` `length` / `content_filter`); None when it finished."""

    input_tokens: int | None
    output_tokens: int | None
    cached_input_tokens: int | None = None
    reasoning_tokens: int | None = None
    incomplete_reason: str | None = None


def usage_detail(usage: object, group: str, name: str) -> int | None:
    """One figure of a usage object's details (`input_tokens_details.cached_tokens`…), None when absent."""
    value = getattr(getattr(usage, group, None), name, None)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class ImageStarted:
    """The provider's built-in image tool began an image (Responses `image_generation_call` in progress)."""

    item_id: str


@dataclass(frozen=True)
class ImagePartial:
    """A partial image of one still being generated: a preview only, never stored."""

    item_id: str
    index: int
    b64: str


@dataclass(frozen=True)
class ImageGenerated:
    """A finished `image_generation_call` output item: the image as base64 (None when there is none),
    its status, the provider's words and code when it failed or refused (else ""), and its revised prompt."""

    item_id: str
    result_b64: str | None
    status: str
    error: str
    revised_prompt: str
    error_code: str = ""


@dataclass(frozen=True)
class ProviderWaiting:
    """The provider asked us to come back (429 or 5xx with Retry-After) before the first token."""

    seconds: float


ProviderEvent = (
    TextDelta | ToolCallRequested | Completed | ProviderWaiting | ReasoningSummaryDelta | ReasoningDone | CitationFound
    | ImageStarted | ImagePartial | ImageGenerated | RefusalDelta | OutputItemDone
)


class ProviderError(Exception):
    """A failure a person can read; ``code`` is stable, ``detail`` never contains the key."""

    def __init__(self, code: str, detail: str, status: int | None = None) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.status = status
