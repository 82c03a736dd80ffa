"""Branch / Fresh Chat: an explicit, retry-safe handoff into a new conversation.

The destination conversation (origin `branch`, same persona, its own memory
snapshot through `conversation_create`), its visible assistant handoff bubble
and its handoff row are created together or not at all. An
`Idempotency-Key` names the action: the same key for the same source always
answers the first destination.

Branching is deliberate access, so it works from a hidden, trashed or
shielded source; whether the handoff then reaches the model is the injection
rule's business (`continuity.rules.handoff_store.handoff_blocks_for`).
"""

from __future__ import annotations

from uuid import UUID

from django.db import IntegrityError, transaction

from continuity.rules.handoff_store import handoff_row_create, live_branch_handoff
from conversations.services.threads.thread_writes import conversation_create, copy_title_for
from elion.base.assistant_settings import assistant_settings_read
from elion.base.errors import Conflict
from elion.base.idempotency import idempotency_key_clean
from memories.services.write_lock import global_write_lock
from transcript.access import access_conversation
from transcript.append import TranscriptAppend, transcript_write
from transcript.models import Conversation, ConversationOrigin, IdempotentAction, MessageKind, MessageStatus, Role
from transcript.provider.binding import configured_provider

BRANCH_ACTION = "branch"


def _recorded_result(source: Conversation, key: str) -> Conversation | None:
    action = (
        IdempotentAction.objects.filter(action=BRANCH_ACTION, source=source, key=key).select_related("result").first()
    )
    return action.result if action else None


def _branch_create(source: Conversation) -> Conversation:
    handoff = live_branch_handoff(source, settings_row=assistant_settings_read())
    if handoff.is_empty:
        raise Conflict(
            "This conversation has no finished messages to carry into a branch yet.", code="branch_source_empty"
        )
    destination = handoff_destination_create(
        persona=source.persona,
        title=copy_title_for(source.display_title),
        bubble=handoff.visible(source.title),
        metadata={"source_conversation_id": str(source.id), "source_message_ids": handoff.source_message_ids},
    )
    handoff_row_create(destination=destination, source=source, handoff=handoff)
    return destination


def handoff_destination_create(
    *, persona: str, bubble: str, metadata: dict, title: str = "", origin: str = ConversationOrigin.BRANCH
) -> Conversation:
    """A Branch / Fresh Chat–style conversation whose one message is the visible handoff bubble `bubble`.

    `title` is its title from the start (a branch carries its source's title, numbered,
    `conversations.services.threads.thread_writes.copy_title_for`); empty, the first send titles it.
    `origin` is `branch`, or `imported` for an archive document's continuation.

    The destination continues under the current provider (seed 004: every durable
    message carries the binding; Branch is how drifted history continues).
    """
    destination = conversation_create(persona=persona, title=title, origin=origin, title_auto=bool(title))
    appending = TranscriptAppend(destination)
    appending.add(
        parent=None,
        role=Role.ASSISTANT,
        binding=configured_provider().binding(),
        make_head=True,
        kind=MessageKind.HANDOFF_ARTIFACT,
        status=MessageStatus.COMPLETE,
        content=bubble,
        metadata=metadata,
    )
    transcript_write(appending)
    return destination


def conversation_branch(*, conversation_id: UUID | str, idempotency_key: object) -> tuple[Conversation, bool]:
    """Branch from a conversation; returns (destination, created).

    The same key for the same source answers the first destination with
    `created=False`: repeated clicks, lost responses and concurrent duplicates
    make one branch.
    """
    key = idempotency_key_clean(idempotency_key)
    with transaction.atomic():
        # Lock order (`write_lock.global_write_lock`): the memory set first, since the
        # destination captures a snapshot; then the source's row, which queues
        # concurrent branches of one source, so a duplicate waits for the
        # first to commit and then finds its result.
        global_write_lock()
        source = access_conversation(conversation_id, lock=True)
        existing = _recorded_result(source, key)
        if existing is not None:
            return existing, False
        try:
            # The unique (action, source, key) constraint is the last guard
            # where the lock does not serialise (SQLite ignores FOR UPDATE):
            # the loser's destination, bubble and row roll back together.
            with transaction.atomic():
                destination = _branch_create(source)
                IdempotentAction.objects.create(action=BRANCH_ACTION, key=key, source=source, result=destination)
        except IntegrityError:
            existing = _recorded_result(source, key)
            if existing is None:
                raise
            return existing, False
    return destination, True
