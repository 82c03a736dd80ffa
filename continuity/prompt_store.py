"""Storing, reusing and rebuilding the per-conversation static prompt.

One `role=system` message per conversation (a partial unique constraint makes
a second impossible). It is built on the first send and reused afterwards;
rebuilt when its inputs change or its policy marker is stale.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction

from continuity.static_prompt import PROMPT_POLICY, PromptInputs, PromptSettings, build_static_prompt
from conversations.models import AssistantSettings, Conversation, Message, MessageKind, Role


def prompt_settings(row: AssistantSettings) -> PromptSettings:
    return PromptSettings(
        owner_name=row.owner_name,
        display_name=row.display_name,
        personality=row.personality,
        custom_instructions=row.custom_instructions,
        archive_access=row.archive_access,
        web_search=row.web_search,
    )


def prompt_inputs_for(conversation: Conversation) -> PromptInputs:
    from conversations.settings_service import assistant_settings_get

    return PromptInputs(persona=conversation.persona, settings=prompt_settings(assistant_settings_get()))


def policy_markers() -> dict[str, str]:
    return {"prompt_policy": PROMPT_POLICY}


def markers_are_current(message: Message) -> bool:
    stored = message.metadata.get("policy_markers", {})
    return all(stored.get(name) == value for name, value in policy_markers().items())


def static_prompt_ensure(conversation: Conversation) -> Message:
    """The conversation's stored prompt, built now if missing or stale.

    Precondition: the caller holds the conversation's row lock inside a
    transaction, so a concurrent first send waits instead of racing; the
    unique constraint is the last guard if it does not.
    """
    existing = Message.objects.filter(conversation=conversation, role=Role.SYSTEM).first()
    content = build_static_prompt(prompt_inputs_for(conversation))
    if existing is not None:
        if existing.content != content or not markers_are_current(existing):
            existing.content = content
            existing.metadata = {**existing.metadata, "policy_markers": policy_markers()}
            existing.save(update_fields=["content", "metadata", "updated_at"])
        return existing
    conversation.last_seq += 1
    conversation.save(update_fields=["last_seq"])
    try:
        with transaction.atomic():
            return Message.objects.create(
                conversation=conversation,
                seq=conversation.last_seq,
                role=Role.SYSTEM,
                kind=MessageKind.STATIC_PROMPT,
                content=content,
                metadata={"policy_markers": policy_markers()},
            )
    except IntegrityError:
        return Message.objects.get(conversation=conversation, role=Role.SYSTEM)


def static_prompts_rebuild(conversations) -> int:
    """Rebuild the stored prompts of these conversations; returns how many changed."""
    changed = 0
    prompts = Message.objects.filter(conversation__in=conversations, role=Role.SYSTEM).select_related("conversation")
    for message in prompts:
        content = build_static_prompt(prompt_inputs_for(message.conversation))
        if content != message.content or not markers_are_current(message):
            message.content = content
            message.metadata = {**message.metadata, "policy_markers": policy_markers()}
            message.save(update_fields=["content", "metadata", "updated_at"])
            changed += 1
    return changed


def static_prompts_rebuild_all() -> int:
    return static_prompts_rebuild(Conversation.objects.filter(messages__role=Role.SYSTEM).distinct())
