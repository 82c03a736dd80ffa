"""Preparing a send or a retry: one short transaction before any provider I/O.

1. `send_prepare` / `retry_prepare` (one transaction, no provider I/O), in a
   straight line (docs/send_path.md): read once (the rows, the settings, then
   what composing needs), compose from that data (the static prompt on a first
   send, the user turn, the assistant message as `streaming`, the model
   request), write once (`transcript_write`), commit.
2. `ReplyRun` streams from the provider in its own asyncio task, flushing
   partial text to the database at once for the first delta, then at most
   every 250 ms (also when the stream pauses) or 2,000 characters, and
   renewing the stream lease, then finalises `complete` or `failed` (or
   `interrupted` when the owner stops it). The task does not belong to the
   transport: a client that goes away stops listening, not persisting.

Events are `(name, data)` pairs named as in docs/api.md "Sending". Each delta
carries `seq`: the reply's length in characters once the delta is appended,
so the text flushed to the database always ends at a known `seq` (its
length), and a watcher joins stored text and live deltas without gap or
duplicate (`conversations.sending.watch`). Every event is also published to the
conversation's channel-layer group (`conversations.sending.broadcast`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from uuid import UUID

from django.db import transaction
from django.utils import timezone

from continuity.rules.dynamic_context import PINNED_CHARACTER_KEY
from continuity.rules.eligibility import may_suggest_memories, may_write_first
from continuity.rules.prompt_store import static_prompt_compose, static_prompt_rewrite
from continuity.rules.request_policy import AssembledRequest, RecallInBirthPeriod
from continuity.rules.request_store import (
    SendContext,
    new_turn_attachment_parts,
    reply_request_for,
    send_context_load,
    send_inputs_read,
)
from conversations.sending import tool_loop
from conversations.sending.commands import FROM_HEAD, ParentChoice, SendCommand
from conversations.sending.tool_offer import available_tools
from conversations.services.characters import access_character
from conversations.services.threads.titles import title_from_first_message
from elion.base.errors import Conflict, InvalidInput
from elion.base.rows import id_or_not_found
from transcript.access import access_conversation
from transcript.append import TranscriptAppend, transcript_write
from transcript.attachments.manifests import attachments_commit, manifest_ids
from transcript.attachments.projection import PreverifiedAttachments, attachments_preverify
from transcript.guard import transcript_write_guard
from transcript.leases import lease_deadline, streams_interrupt_expired
from transcript.models import Attachment, Conversation, Message, MessageKind, MessageStatus, Role
from transcript.provider.binding import provider_binding_gate_probed
from transcript.provider.gateway import ProviderBinding, ProviderConfig, RequestOptions
from transcript.provider.request_builder import request_options

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class FreshReply:
    """A reply to start now: its streaming row is committed, its request built."""

    conversation_id: UUID
    user_message_id: UUID
    assistant_message_id: UUID
    config: ProviderConfig
    request: AssembledRequest
    # The tools offered to the model for this reply, and what they may see.
    tools: list[dict]
    tool_context: tool_loop.ToolContext
    # `store` (private by default) and the conversation's prompt cache key.
    options: RequestOptions


@dataclass(frozen=True)
class ReplayedReply:
    """A reply already stored (a repeated client_message_id, or a refused request): nothing to start."""

    conversation_id: UUID
    user_message_id: UUID
    assistant_message_id: UUID
    status: str
    content: str = ""
    diagnostics: dict | None = None
    error: dict | None = None
    metadata: dict | None = None  # the stored reply's: how it ended (`broadcast.done_data`)


PreparedReply = FreshReply | ReplayedReply


def send_prepare(command: SendCommand) -> PreparedReply:
    """Commit the user turn and a `streaming` assistant message; no provider I/O.

    The disk and CPU work comes first, outside any lock: the attachment blobs
    are verified (a stat each, a read and hash only for a new or changed
    one). Then one durable transaction (`_send_commit`)
    commits the turn: everything in it is committed before the provider is
    called, which `durable=True` asserts (it refuses to run inside another
    transaction). The search index has nothing pending for it to write: each
    reply indexes its turn once it is stored, a fork its copies.
    """
    # An unknown pinned character is a 404 before anything is read or written.
    pinned = _pinned_character_metadata(command.pinned_character_id)
    preverified = attachments_preverify(
        conversation_id=command.conversation_id, attachment_ids=command.attachment_ids
    )
    return _send_commit(command, pinned=pinned, preverified=preverified)


@transaction.atomic(durable=True)
def _send_commit(command: SendCommand, *, pinned: dict, preverified: PreverifiedAttachments) -> PreparedReply:
    # Row lock: sends, rewinds and first-prompt creation in one conversation
    # are serialised, so two sends can never both pass the streaming check.
    conversation = access_conversation(command.conversation_id, lock=True)
    context = send_context_load(conversation, verified_parts=preverified.parts)
    # Seed 004: the full binding tuple is validated before any replay or provider I/O.
    config = provider_binding_gate_probed(conversation)

    if command.client_message_id is not None:
        used = Message.objects.filter(pk=command.client_message_id).first()
        if used is not None and used.conversation_id == conversation.id and used.role != Role.SYSTEM:
            return _prepare_for_repeated_turn(context, used, command, config)
        if used is not None:
            raise Conflict("client_message_id is already used by another message.", code="client_message_id_conflict")

    transcript_write_guard(conversation, action="send", loaded=context.streaming)
    if command.check_in is not None:
        _check_in_target_guard(conversation)
    parent = _resolve_parent(context, command.parent_id)
    send_inputs_read(context, text=command.content)
    # Compose: the stored prompt (a first send stores it before the turn it answers), the user turn, its title.
    composed = _SendWrite(TranscriptAppend(conversation), binding=config.binding())
    _prompt_composed(context, composed)
    user_message = _user_turn_composed(context, composed, command, parent=parent, pinned=pinned, preverified=preverified)
    if not conversation.title:
        conversation.title = _first_title(command)
        conversation.title_auto = True
    return _start_reply(context, composed, user_message, config)


def _user_turn_composed(
    context: SendContext,
    composed: _SendWrite,
    command: SendCommand,
    *,
    parent: Message | None,
    pinned: dict,
    preverified: PreverifiedAttachments,
) -> Message:
    """The new user turn, composed for the send's one write and kept in the context, with its
    uploads' request parts (verified before the lock) for the request built next."""
    client_id = {"id": command.client_message_id} if command.client_message_id else {}
    user_message = composed.appending.add(
        parent=parent,
        role=Role.USER,
        binding=composed.binding,
        make_head=False,
        **client_id,
        **_turn_kind(command, pinned),
        content=command.content,
    )
    context.composed[user_message.id] = user_message
    if command.attachment_ids:
        context.new_turn_parts[user_message.id] = new_turn_attachment_parts(
            context.conversation.id, command.attachment_ids, verified=preverified.parts
        )
    composed.user_turn = user_message
    composed.attachment_ids = command.attachment_ids
    composed.imported = preverified.imported
    return user_message


CHECK_IN_TARGET_REFUSED = "check_in_target_refused"


def _check_in_target_guard(conversation: Conversation) -> None:
    """A check-in writes first only where the eligibility rule lets it (`may_write_first`), asked under the
    send's row lock so no visibility transition slips between the check and the write: 409
    `check_in_target_refused`, whose detail says why (the run pauses its check-in with it)."""
    refusal = may_write_first(conversation)
    if refusal is not None:
        raise Conflict(refusal, code=CHECK_IN_TARGET_REFUSED)


def _turn_kind(command: SendCommand, pinned: dict) -> dict:
    """The new turn's kind and metadata: the owner's speech, or a check-in's trigger (an app event)."""
    if command.check_in is not None:
        return {"kind": MessageKind.CHECK_IN_TRIGGER, "metadata": {"check_in": command.check_in}}
    return {"metadata": {**pinned, "voice": True} if command.voice else pinned}


@dataclass
class _SendWrite:
    """What a send composed for its one write (`_write_once`): the messages to append, its stored prompt
    when rebuilt in place, and the new user turn with the uploads its manifest lists."""

    appending: TranscriptAppend
    binding: ProviderBinding  # the provider binding the send's turns carry (the gate's)
    prompt_rebuilt: Message | None = None
    user_turn: Message | None = None
    attachment_ids: tuple[UUID, ...] = ()
    imported: frozenset[UUID] = frozenset()


def _write_once(composed: _SendWrite, *, also: tuple[str, ...]) -> None:
    """The send's one write: the rebuilt prompt, every appended message and the conversation (its head, last
    seq and the columns in `also`), then the new turn's manifest (which claims its uploads)."""
    if composed.prompt_rebuilt is not None:
        static_prompt_rewrite(composed.prompt_rebuilt)
    transcript_write(composed.appending, also=also)
    if composed.user_turn is not None and composed.attachment_ids:
        attachments_commit(
            message=composed.user_turn, attachment_ids=composed.attachment_ids, imported=composed.imported
        )


def _first_title(command: SendCommand) -> str:
    """A new conversation's title from its first turn: its words, or (with none) its uploads' names; a
    check-in's title when its trigger opens the conversation."""
    if command.check_in is not None:
        return title_from_first_message(str(command.check_in.get("title") or command.content))
    title = title_from_first_message(command.content)
    if title or not command.attachment_ids:
        return title
    rows = Attachment.objects.in_bulk(command.attachment_ids)
    return title_from_first_message(command.content, [rows[pk].name for pk in command.attachment_ids if pk in rows])


def _pinned_character_metadata(character_id: int | None) -> dict:
    """The user turn's record of a character pinned for it (the choice only;
    the character's text enters the request as dynamic context, never stored)."""
    if character_id is None:
        return {}

    return {PINNED_CHARACTER_KEY: access_character(character_id).pk}


def _pinned_character_id(user_message: Message) -> int | None:
    pinned = (user_message.metadata or {}).get(PINNED_CHARACTER_KEY)
    return pinned if isinstance(pinned, int) and not isinstance(pinned, bool) else None


def _prepare_for_repeated_turn(
    context: SendContext, existing: Message, command: SendCommand, config: ProviderConfig
) -> PreparedReply:
    """The same client_message_id again never makes a second user turn."""
    if (
        existing.role != Role.USER
        or existing.content != command.content
        or manifest_ids(existing) != list(command.attachment_ids)
    ):
        raise Conflict(
            "client_message_id was already sent with different content or attachments.",
            code="client_message_id_conflict",
        )
    conversation = context.conversation
    reply = context.latest_reply_to(existing)
    if reply is not None:
        if reply.status == MessageStatus.STREAMING and (
            reply.lease_expires_at is None or reply.lease_expires_at <= timezone.now()
        ):
            streams_interrupt_expired(conversation)
            reply.status = MessageStatus.INTERRUPTED
        return ReplayedReply(
            conversation_id=conversation.id,
            user_message_id=existing.id,
            assistant_message_id=reply.id,
            status=reply.status,
            content=reply.content,
            diagnostics=reply.metadata.get("diagnostics"),
            metadata=reply.metadata,
        )
    # The turn was stored but its reply failed or never started: answer it now.
    transcript_write_guard(conversation, action="send", loaded=context.streaming)
    send_inputs_read(context, text=existing.content)
    composed = _SendWrite(TranscriptAppend(conversation), binding=config.binding())
    _prompt_composed(context, composed)
    return _start_reply(context, composed, existing, config)


def _resolve_parent(context: SendContext, parent_id: UUID | None | ParentChoice) -> Message | None:
    head_id = context.conversation.head_id
    if parent_id is FROM_HEAD:
        return context.head if head_id else None
    if parent_id is None:
        return None
    parent = context.get(parent_id)
    if parent.role != Role.ASSISTANT or parent.status == MessageStatus.STREAMING:
        raise InvalidInput(
            "parent_id must name a finished assistant message (or be null to start from the beginning).",
            code="invalid_parent",
        )
    return parent


def retry_prepare(*, conversation_id: UUID, message_id: UUID | str) -> PreparedReply:
    """Regenerate an assistant reply as a new sibling under the same user turn (disk work first, as a send)."""
    conversation_id = id_or_not_found(
        conversation_id, kind="uuid", missing="No conversation has that id.", code="conversation_not_found"
    )
    preverified = attachments_preverify(conversation_id=conversation_id, attachment_ids=())
    return _retry_commit(conversation_id, message_id, preverified=preverified)


@transaction.atomic(durable=True)
def _retry_commit(conversation_id: UUID, message_id: UUID | str, *, preverified: PreverifiedAttachments) -> PreparedReply:
    conversation = access_conversation(conversation_id, lock=True)
    context = send_context_load(conversation, verified_parts=preverified.parts)
    config = provider_binding_gate_probed(conversation)
    target = context.get(message_id)
    if target.role != Role.ASSISTANT or target.kind != MessageKind.ORDINARY or target.parent_id is None:
        raise InvalidInput("Only an assistant reply can be retried.", code="not_retryable")
    transcript_write_guard(conversation, action="retry", loaded=context.streaming)
    user_message = context.get(target.parent_id)
    send_inputs_read(context, text=user_message.content)
    composed = _SendWrite(TranscriptAppend(conversation), binding=config.binding())
    _prompt_composed(context, composed)
    return _start_reply(context, composed, user_message, config)


def _prompt_composed(context: SendContext, composed: _SendWrite) -> None:
    """The stored prompt this reply uses, into the context: built from the inputs `send_inputs_read` read (a
    first send, or a stale prompt) and composed for the send's one write, else the stored one as it is."""
    if context.prompt_inputs is None:
        return
    rebuilt = context.prompt is not None
    context.prompt = static_prompt_compose(composed.appending, context.prompt, context.prompt_inputs)
    if rebuilt:
        composed.prompt_rebuilt = context.prompt


def _start_reply(context: SendContext, composed: _SendWrite, user_message: Message, config: ProviderConfig) -> PreparedReply:
    """Compose the request and the streaming assistant message (the new head), then write once.

    The conversation's update saves its `last_seq` (also for a stored prompt composed now), head, title
    and where the model's view begins, in either outcome.
    """
    conversation = context.conversation
    # Elion may suggest (a memory, issue 35; a check-in, issue 44) only in a `normal` chat, each with its switch.
    may_suggest = may_suggest_memories(conversation)
    tools = available_tools(
        archive_access=context.settings_row.archive_access,
        web_search=context.settings_row.web_search,
        api_selector=config.api_selector,
        image_generation=context.settings_row.image_generation,
        memory_suggestions=context.settings_row.memory_suggestions and may_suggest,
        check_in_proposals=context.settings_row.check_in_proposals and may_suggest,
    )
    try:
        request = reply_request_for(context, user_message, tools=tools)
    except RecallInBirthPeriod:
        return _refuse_reply(composed, user_message, config)
    assistant = composed.appending.add(
        parent=user_message,
        role=Role.ASSISTANT,
        binding=composed.binding,
        make_head=True,
        status=MessageStatus.STREAMING,
        lease_expires_at=lease_deadline(),
        metadata={"diagnostics": request.diagnostics},
    )
    conversation.in_view = request.in_view
    _write_once(composed, also=("title", "title_auto", "in_view"))
    return FreshReply(
        conversation_id=conversation.id,
        user_message_id=user_message.id,
        assistant_message_id=assistant.id,
        config=config,
        request=request,
        tools=tools,
        tool_context=tool_loop.ToolContext(
            conversation_id=conversation.id, persona=conversation.persona, message_id=assistant.id,
            pinned_character_id=_pinned_character_id(user_message), config=config,
        ),
        options=request_options(context.settings_row, conversation),
    )


RECALL_REFUSED = (
    "recall_in_birth_period",
    "This reply was not sent: the request carried automatically recalled context before the "
    "conversation's first reply, which is never allowed. This is an internal error; it has been logged.",
)


def _refuse_reply(composed: _SendWrite, user_message: Message, config: ProviderConfig) -> PreparedReply:
    """Final assembly refused a birth-period request with a recall section: the
    reply fails, stored as such (in the send's one write), and nothing reaches any provider path."""
    conversation = composed.appending.conversation
    code, detail = RECALL_REFUSED
    logger.error(
        "refused to dispatch a birth-period request with an automatic recall section (conversation %s)",
        conversation.id,
    )
    assistant = composed.appending.add(
        parent=user_message,
        role=Role.ASSISTANT,
        binding=composed.binding,
        make_head=True,
        status=MessageStatus.FAILED,
        error=code,
        error_detail=detail,
    )
    _write_once(composed, also=("title", "title_auto"))
    return ReplayedReply(
        conversation_id=conversation.id,
        user_message_id=user_message.id,
        assistant_message_id=assistant.id,
        status=MessageStatus.FAILED,
        error={"error": code, "detail": detail},
    )
