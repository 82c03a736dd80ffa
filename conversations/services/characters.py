"""Character Studio: saved characters (services and selectors).

Characters are a prompt source for every conversation: each stored static
prompt lists them by name with their image guidance (the saved-characters
section). So adding, editing or deleting a character sends `character_changed`,
whose receiver (`continuity.rules.refresh_triggers`) rebuilds every stored
prompt inside the same transaction, before the change reports success. A character can also be pinned for one message, which puts
its full description in that send's dynamic context (never stored).
The images made of a character (its image guidance in their prompt) are its
gallery (`character_gallery`).
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from continuity.rules.eligibility import outside_quarantine
from continuity.rules.prompt_refresh import refreshes_stale_prompts
from elion.base.domain_events import character_changed
from elion.base.errors import InvalidInput
from elion.base.rows import access_row
from elion.models import Character
from memories.services.write_lock import global_write_lock
from transcript.models import Attachment, MessageAttachment

EDITABLE_FIELDS = ("name", "description", "image_guidance")
NAME_MAX = 200
DESCRIPTION_MAX = 10_000
IMAGE_GUIDANCE_MAX = 4_000
_LIMITS = {"name": NAME_MAX, "description": DESCRIPTION_MAX, "image_guidance": IMAGE_GUIDANCE_MAX}


def characters_list() -> list[Character]:
    return list(Character.objects.order_by("name", "id"))


def access_character(character_id: object) -> Character:
    """The character with this id, or 404 `character_not_found`."""
    return access_row(
        Character.objects.all(), character_id, kind="int", missing="No character has that id.", code="character_not_found"
    )


def clean_character_fields(changes: dict, *, creating: bool) -> dict[str, str]:
    unknown = set(changes) - set(EDITABLE_FIELDS)
    if unknown:
        raise InvalidInput(f"Unknown character fields: {', '.join(sorted(unknown))}.", code="unknown_field")
    cleaned: dict[str, str] = {}
    for name, value in changes.items():
        if value is None:
            value = ""
        if not isinstance(value, str):
            raise InvalidInput(f"{name} must be text.", code="invalid_character")
        value = value.strip()
        if len(value) > _LIMITS[name]:
            raise InvalidInput(f"{name} can be at most {_LIMITS[name]:,} characters.", code="invalid_character")
        cleaned[name] = value
    if (creating or "name" in cleaned) and not cleaned.get("name"):
        raise InvalidInput("A character needs a name.", code="invalid_character")
    return cleaned


def _lock() -> None:
    """Lock order step 1 (see `write_lock.global_write_lock`), taken before the write: a
    conversation created meanwhile waits, so it cannot store a prompt built
    from the old character list."""
    global_write_lock()


@refreshes_stale_prompts
def character_create(*, name: object, description: object = "", image_guidance: object = "") -> Character:
    fields = clean_character_fields(
        {"name": name, "description": description, "image_guidance": image_guidance}, creating=True
    )
    _lock()
    character = Character.objects.create(**fields)
    character_changed.send(sender=Character, character_id=character.pk)
    return character


@refreshes_stale_prompts
def character_edit(*, character_id: object, changes: dict) -> Character:
    fields = clean_character_fields(changes, creating=False)
    _lock()
    character = access_character(character_id)
    for name, value in fields.items():
        setattr(character, name, value)
    character.save()
    character_changed.send(sender=Character, character_id=character.pk)
    return character


@refreshes_stale_prompts
def character_delete(*, character_id: object) -> None:
    _lock()
    character = access_character(character_id)
    deleted_id = character.pk
    character.delete()
    character_changed.send(sender=Character, character_id=deleted_id)


GALLERY_LIMIT = 60


@dataclass(frozen=True)
class GalleryImage:
    """One image of a character, and the reply (conversation and message) that holds it."""

    attachment: Attachment
    conversation_id: UUID
    message_id: UUID


def character_gallery(character: Character, limit: int = GALLERY_LIMIT) -> list[GalleryImage]:
    """The images generated with this character's guidance, newest first, each once (a fork lists the
    same image again), from conversations a page may show: never trashed ones or a hidden folder's."""
    entries = (
        MessageAttachment.objects.filter(
            attachment__generated=True, attachment__generated_character=character,
            conversation__in=outside_quarantine(),
        )
        .select_related("attachment")
        .order_by("-attachment__created_at", "-attachment_id", "conversation__created_at")
    )
    seen: set[UUID] = set()
    gallery: list[GalleryImage] = []
    for entry in entries[: limit * 4]:
        if entry.attachment_id in seen:
            continue
        seen.add(entry.attachment_id)
        gallery.append(GalleryImage(entry.attachment, entry.conversation_id, entry.message_id))
        if len(gallery) == limit:
            break
    return gallery


def character_repr(character: Character) -> dict:
    return {
        "id": character.pk,
        "name": character.name,
        "description": character.description,
        "image_guidance": character.image_guidance,
    }
