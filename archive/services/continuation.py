"""Continue an archived conversation in a new chat (issue 21, "Continue an archived conversation").

The owner's deliberate act on an archive document's page: a new conversation
(origin `branch`, like Branch / Fresh Chat, with its own memory snapshot
through `conversation_create`) whose visible handoff bubble holds the
document's final eight turns under the one handoff policy (limits, markers,
labels, budget: `continuity.rules.handoff_policy`). Provenance lives in the bubble's
metadata: `source_document_id` and the `source_turns` it carries; the model
receives the same turns in the static prompt's continuity slot
(`continuity.rules.archive_handoff_store.archive_handoff_blocks_for`), rebuilt under the
current limits, and nothing at all once the document is removed.

The bubble is a handoff artifact, so it never feeds a later handoff, keyword
recall or search (none of them reads handoff artifacts).

Retry-safe: an `Idempotency-Key` names the action. The same key for the same
document always answers the first conversation (409 `idempotency_key_reused`
when it asks for another persona). The key is remembered in
`IdempotentAction` under the action `archive_continue:<document id>`; the
row's `source` is the new conversation itself, since an archive document is
not a conversation. Every continuation takes `global_write_lock()` first (it
captures a snapshot), so two requests with one key are serialised on both
databases and the second finds the first's row.
"""

from __future__ import annotations

from django.db import transaction

from archive.models import ArchiveDocument
from archive.services.documents import access_document
from archive.services.handoff_store import archive_document_handoff, archive_turn_numbers
from continuity.services.branching import handoff_destination_create
from conversations.services.threads.thread_writes import copy_title_for
from elion.base.assistant_settings import assistant_settings_read
from elion.base.errors import Conflict, InvalidInput
from elion.base.idempotency import idempotency_key_clean
from memories.services.write_lock import global_write_lock
from transcript.models import Conversation, ConversationOrigin, IdempotentAction, Persona

CONTINUE_ACTION = "archive_continue"


def continue_action(document: ArchiveDocument) -> str:
    return f"{CONTINUE_ACTION}:{document.pk}"


def _recorded_continuation(document: ArchiveDocument, key: str) -> Conversation | None:
    action = (
        IdempotentAction.objects.filter(action=continue_action(document), key=key).select_related("result").first()
    )
    return action.result if action else None


def _continuation_create(document: ArchiveDocument, *, persona: str) -> Conversation:
    handoff = archive_document_handoff(document, persona=persona, settings_row=assistant_settings_read())
    if handoff.is_empty:
        raise Conflict(
            "This archive document has no conversation turns to continue.", code="archive_document_not_a_conversation"
        )
    return handoff_destination_create(
        persona=persona,
        bubble=handoff.visible(document.title),
        metadata={"source_document_id": document.pk, "source_turns": archive_turn_numbers(handoff)},
        origin=ConversationOrigin.IMPORTED,
        # Titled after the document from the start, numbered like any copy ("Heron talk (2)"), not "New chat".
        title=copy_title_for(document.title),
    )


def archive_document_continue(
    *, document_id: int | str, idempotency_key: object, persona: object = Persona.ELION
) -> tuple[Conversation, bool]:
    """Continue an archived conversation in a new chat; returns (conversation, created)."""
    key = idempotency_key_clean(idempotency_key)
    if persona not in Persona.values:
        raise InvalidInput(f"persona must be one of {', '.join(Persona.values)}.", code="unknown_persona")
    with transaction.atomic():
        # Lock order (`write_lock.global_write_lock`): the memory set first; it also queues
        # concurrent continuations, so a duplicate finds the first's result.
        global_write_lock()
        document = access_document(document_id)
        existing = _recorded_continuation(document, key)
        if existing is not None:
            if existing.persona != persona:
                raise Conflict(
                    "This Idempotency-Key was already used to continue this document with another persona.",
                    code="idempotency_key_reused",
                )
            return existing, False
        destination = _continuation_create(document, persona=str(persona))
        IdempotentAction.objects.create(
            action=continue_action(document), key=key, source=destination, result=destination
        )
    return destination, True
