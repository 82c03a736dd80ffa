"""Image generation inside a reply, on both selectors; every image stored as a generated attachment.

* `chat.completions`: the app's own function tool `generate_image` (`prompt`,
  optional `character_id`), carried out here through the SDK's Images API
  (`provider_gateway.image_generate`) on the conversation's own provider
  binding, with the model `ELION_IMAGE_MODEL`. The character named by
  `character_id`, else the one pinned for the message, has its image
  guidance added to the prompt sent; the tool result (which the model reads)
  and the reply's record say which character was used.
* `responses`: the provider's built-in `image_generation` tool. The provider
  writes the image prompt itself, so the app cannot add to it: the model
  has the guidance in front of it (the pinned character section of the
  dynamic context, the saved characters section of the stored prompt), and
  the record names the pinned character, if any. Partial images stream to
  the page as previews (`image` events, never stored); the finished
  `image_generation_call` item's base64 is stored.

Every image, made or failed, is recorded in the reply's
`metadata["generated_images"]` (`transcript.attachments.generated`). A
failure (provider error, content-policy refusal, bad base64, too large) is a
tool error: the model reads it on `chat.completions` and the reply shows it on
both; it never fails the reply.

Stream events (besides `tool`): `image {"status": "generating"|"partial"|"done"|"error", …}`
with `call_id` or `item_id`; `partial` carries `index` and `b64` (a preview,
left out above PARTIAL_PREVIEW_MAX_CHARACTERS); `done` the `attachment_id`;
`error` the `detail`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings

from conversations.sending.persist import persist
from conversations.sending.tool_loop import AsyncTool, ToolContext, ToolResult
from conversations.sending.tool_offer import GENERATE_IMAGE
from elion.models import Character
from transcript.attachments.generated import (
    GeneratedImageRejected,
    generated_image_bytes,
    generated_image_failure_record,
    generated_image_store,
)
from transcript.provider import gateway as provider_gateway
from transcript.provider.gateway import ProviderError, ToolCallRequested

logger = logging.getLogger(__name__)

IMAGE_EVENT = "image"
BUILTIN_TOOL_NAME = "image_generation"
PROMPT_MAX_CHARACTERS = 32_000
# A partial image larger than this travels without its preview (the channel layer carries every event).
PARTIAL_PREVIEW_MAX_CHARACTERS = 1_500_000

Emit = Callable[[str, dict], None]


class ImageArgumentsError(Exception):
    """The model's `generate_image` arguments cannot be used; the model reads why."""


@dataclass(frozen=True)
class ImageCharacter:
    id: int
    name: str
    image_guidance: str


def character_chosen(character_id: int | None, pinned_character_id: int | None) -> ImageCharacter | None:
    """The character an image is of: the one the model named, else the one pinned for the message.

    A named id no character has is an ImageArgumentsError; a pinned character
    deleted since the message was sent is simply not used.
    """
    wanted = character_id if character_id is not None else pinned_character_id
    if wanted is None:
        return None
    character = Character.objects.filter(pk=wanted).first()
    if character is None:
        if character_id is not None:
            raise ImageArgumentsError(f"no saved character has id {character_id}.")
        return None
    return ImageCharacter(character.pk, character.name, character.image_guidance)


def image_prompt(prompt: str, character: ImageCharacter | None) -> str:
    """The prompt the image model receives: the model's words, then the character's image guidance."""
    if character is None or not character.image_guidance.strip():
        return prompt
    name = " ".join(character.name.split())
    return f"{prompt}\n\nImage guidance for {name}: {character.image_guidance.strip()}"


def _arguments(call: ToolCallRequested) -> tuple[str, int | None]:
    try:
        args = json.loads(call.arguments_json or "{}")
    except json.JSONDecodeError as exc:
        raise ImageArgumentsError("the arguments are not valid JSON.") from exc
    if not isinstance(args, dict):
        raise ImageArgumentsError("arguments must be a JSON object.")
    prompt = args.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise ImageArgumentsError("prompt must be a non-empty string.")
    if len(prompt) > PROMPT_MAX_CHARACTERS:
        raise ImageArgumentsError(f"prompt can be at most {PROMPT_MAX_CHARACTERS:,} characters.")
    character_id = args.get("character_id")
    if character_id is not None and (isinstance(character_id, bool) or not isinstance(character_id, int)):
        raise ImageArgumentsError("character_id must be the integer id of a saved character.")
    return prompt.strip(), character_id


def _record(source: str, ref: dict, character: ImageCharacter | None, prompt: str) -> dict:
    return {
        "source": source, **ref, "model": settings.ELION_IMAGE_MODEL, "prompt": prompt,
        "character_id": character.id if character else None, "character_name": character.name if character else None,
    }


async def _failed(context: ToolContext, record: dict, ref: dict, code: str, detail: str, emit: Emit) -> ToolResult:
    """Record the failure on the reply, tell the page, and answer the tool error the model reads."""
    try:
        await persist(generated_image_failure_record)(
            message_id=context.message_id, record={**record, "error": {"error": code, "detail": detail}}
        )
    except Exception:  # noqa: BLE001 - the model and the page still hear about it
        logger.exception("recording a failed image on reply %s failed", context.message_id)
    emit(IMAGE_EVENT, {"status": "error", **ref, "error": code, "detail": detail})
    return ToolResult(f"Tool error: the image was not made. {detail}", True)


async def _kept(context: ToolContext, record: dict, ref: dict, b64: str | None, character: ImageCharacter | None,
                emit: Emit) -> tuple[str | None, str, str]:
    """Check and store the provider's base64; (attachment id, "", "") or (None, error code, detail)."""
    try:
        data, mime = generated_image_bytes(b64)
        attachment = await persist(generated_image_store)(
            conversation_id=context.conversation_id, message_id=context.message_id, data=data, mime=mime,
            character_id=character.id if character else None, record=record,
        )
    except GeneratedImageRejected as exc:
        return None, "image_rejected", f"The image could not be kept: {exc.reason}."
    emit(IMAGE_EVENT, {"status": "done", **ref, "attachment_id": str(attachment.id)})
    return str(attachment.id), "", ""


async def generate_image_run(call: ToolCallRequested, context: ToolContext, emit: Emit) -> ToolResult:
    """The `generate_image` tool: one image through the Images API, stored on the reply. Never raises."""
    ref = {"call_id": call.call_id}
    try:
        prompt, character_id = _arguments(call)
        character = await persist(character_chosen)(character_id, context.pinned_character_id)
    except ImageArgumentsError as exc:
        return ToolResult(f"Tool error: {exc}", True)
    full_prompt = image_prompt(prompt, character)
    record = _record("generate_image", ref, character, full_prompt)
    emit(IMAGE_EVENT, {"status": "generating", **ref})
    try:
        if context.config is None or context.message_id is None:
            raise ProviderError("image_generation_unavailable", "Images can only be made inside a reply.")
        image = await provider_gateway.image_generate(context.config, prompt=full_prompt, model=settings.ELION_IMAGE_MODEL)
        record["revised_prompt"] = image.revised_prompt
        attachment_id, code, detail = await _kept(context, record, ref, image.b64, character, emit)
    except ProviderError as exc:
        attachment_id, code, detail = None, exc.code, exc.detail
    except Exception:  # noqa: BLE001 - a broken image must not break the reply; the model hears about it
        logger.exception("generate_image failed in reply %s", context.message_id)
        attachment_id, code, detail = None, "internal_error", "Image generation failed inside the app."
    if attachment_id is None:
        return await _failed(context, record, ref, code, detail, emit)
    used = {"id": character.id, "name": character.name} if character else None
    return ToolResult(json.dumps(
        {"image": "created; it is shown in your reply", "attachment_id": attachment_id, "character": used,
         "prompt": full_prompt},
        ensure_ascii=False,
    ))


ASYNC_TOOLS: dict[str, AsyncTool] = {GENERATE_IMAGE["name"]: generate_image_run}


# --- The Responses built-in tool --------------------------------------------------------


def builtin_image_started(event: provider_gateway.ImageStarted, emit: Emit) -> None:
    emit("tool", {"name": BUILTIN_TOOL_NAME, "status": "running"})
    emit(IMAGE_EVENT, {"status": "generating", "item_id": event.item_id})


def builtin_image_partial(event: provider_gateway.ImagePartial, emit: Emit) -> None:
    """A preview for the page only: nothing is stored."""
    preview = {"b64": event.b64} if len(event.b64) <= PARTIAL_PREVIEW_MAX_CHARACTERS else {}
    emit(IMAGE_EVENT, {"status": "partial", "item_id": event.item_id, "index": event.index, **preview})


async def builtin_image_finished(event: provider_gateway.ImageGenerated, context: ToolContext, emit: Emit) -> None:
    """Store a finished `image_generation_call`'s image, or record why there is none. Never raises."""
    ref = {"item_id": event.item_id}
    try:
        character = await persist(character_chosen)(None, context.pinned_character_id)
        record = _record(BUILTIN_TOOL_NAME, ref, character, event.revised_prompt)
        if event.error or event.result_b64 is None:
            detail = f"The model provider did not make the image: {event.error or 'it sent no image'}."
            code = "image_refused" if event.error_code in provider_gateway.IMAGE_REFUSED_CODES else "image_failed"
            attachment_id = None
        else:
            attachment_id, code, detail = await _kept(context, record, ref, event.result_b64, character, emit)
        if attachment_id is None:
            await _failed(context, record, ref, code, detail, emit)
    except Exception:  # noqa: BLE001 - the reply goes on; the page hears about it
        logger.exception("storing a generated image failed in reply %s", context.message_id)
        emit(IMAGE_EVENT, {"status": "error", **ref, "error": "internal_error",
                           "detail": "The image could not be stored."})
        attachment_id = None
    emit("tool", {"name": BUILTIN_TOOL_NAME, "status": "done" if attachment_id else "error"})
