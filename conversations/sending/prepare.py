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
from dataclasses import dataclass, field, replace
from uuid import UUID

from django.db import transaction
from django.utils import timezone

from continuity.rules.dynamic_context import PINNED_CHARACTER_KEY
from continuity.rules.eligibility import may_suggest_memories, may_write_first
from continuity.rules.prompt_store import static_prompt_compose, static_prompt_rewrite
from continuity.rules.request_policy import AssembledRequest, RecallInBirthPeriod
from continuity.rules.request_store import SendContext, reply_request_for, send_context_load, send_inputs_read
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
from transcript.attachments.projection import PreverifiedAttachments, PreverifyStale, attachments_preverify
from transcript.guard import transcript_write_guard
from transcript.leases import lease_deadline, streams_interrupt_expired
from transcript.models import Conversation, Message, MessageKind, MessageStatus, Role
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
    """Commit the user turn and a `streaming` assistant message; no provider I/O (`_prepared`)."""
    # An unknown pinned character is a 404 before anything is read or written.
    pinned = _pinned_character_metadata(command.pinned_character_id)
    return _prepared(_Asked(command.conversation_id, command=command, pinned=pinned))


def retry_prepare(*, conversation_id: UUID, message_id: UUID | str) -> PreparedReply:
    """Regenerate an assistant reply as a new sibling under the same user turn (`_prepared`, as a send)."""
    conversation_id = id_or_not_found(
        conversation_id, kind="uuid", missing="No conversation has that id.", code="conversation_not_found"
    )
    return _prepared(_Asked(conversation_id, retried_id=message_id))


@dataclass(frozen=True)
class _Asked:
    """What a send (`command`) or a retry (`retried_id`, the reply to write again) asks, before any read."""

    conversation_id: UUID
    command: SendCommand | None = None
    pinned: dict = field(default_factory=dict)  # the new turn's pinned character (`_pinned_character_metadata`)
    retried_id: UUID | str | None = None


ATTACHMENTS_CHANGED = "attachments_changed"


def _prepared(asked: _Asked) -> PreparedReply:
    """A send, a retry and a repeated turn, one path: the disk work first, outside any lock, then one
    durable transaction (`_send_commit`).

    Before the lock the attachment blobs are verified (a stat each, a read and hash only for a new or
    changed one; the new turn's uploads copied into the conversation's store), so the lock holds no disk
    I/O: under it, every part comes from that verification, and a blob that failed it is refused from its
    verdict. Should the branch list an attachment this verification did not see (its manifests changed in
    between), the transaction is let go and the read runs again, whole; twice is a 409.
    """
    attachment_ids = asked.command.attachment_ids if asked.command is not None else ()
    for whole in (False, True):
        preverified = attachments_preverify(
            conversation_id=asked.conversation_id, attachment_ids=attachment_ids, whole=whole
        )
        try:
            return _send_commit(asked, preverified=preverified)
        except PreverifyStale:
            logger.info("a send's attachments changed before its lock (conversation %s): read again", asked.conversation_id)
    raise Conflict(
        "The conversation's attachments changed while this message was being sent; send it again.",
        code=ATTACHMENTS_CHANGED,
    )


@transaction.atomic(durable=True)
def _send_commit(asked: _Asked, *, preverified: PreverifiedAttachments) -> PreparedReply:
    """Under the row lock: read once, compose the plan, write once. Everything in it is committed before
    the provider is called, which `durable=True` asserts (it refuses to run inside another transaction)."""
    # Row lock: sends, rewinds and first-prompt creation in one conversation
    # are serialised, so two sends can never both pass the streaming check.
    conversation = access_conversation(asked.conversation_id, lock=True)
    context = send_context_load(conversation, preverified=preverified)
    # Seed 004: the full binding tuple is validated before any replay or provider I/O.
    config = provider_binding_gate_probed(conversation)
    turn = _send_turn(context, asked.command) if asked.command else _retry_turn(context, asked.retried_id)
    if isinstance(turn, ReplayedReply):
        return turn
    plan = _plan(context, config, turn, asked=asked, preverified=preverified)
    _write_once(plan)
    return plan.prepared


@dataclass(frozen=True)
class _Turn:
    """The user turn a reply answers: a stored one (a retry, a repeated turn), or a new one under `parent`."""

    content: str
    stored: Message | None = None
    parent: Message | None = None


def _send_turn(context: SendContext, command: SendCommand) -> _Turn | ReplayedReply:
    conversation = context.conversation
    if command.client_message_id is not None:
        used = Message.objects.filter(pk=command.client_message_id).first()
        if used is not None and used.conversation_id == conversation.id and used.role != Role.SYSTEM:
            return _repeated_turn(context, used, command)
        if used is not None:
            raise Conflict("client_message_id is already used by another message.", code="client_message_id_conflict")
    transcript_write_guard(conversation, action="send", loaded=context.streaming)
    if command.check_in is not None:
        _check_in_target_guard(conversation)
    return _Turn(content=command.content, parent=_resolve_parent(context, command.parent_id))


def _repeated_turn(context: SendContext, existing: Message, command: SendCommand) -> _Turn | ReplayedReply:
    """The same client_message_id again never makes a second user turn: its reply, or (when it failed or
    never started) the stored turn to answer now."""
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
    transcript_write_guard(conversation, action="send", loaded=context.streaming)
    return _Turn(content=existing.content, stored=existing)


def _retry_turn(context: SendContext, message_id: UUID | str | None) -> _Turn:
    target = context.get(message_id)
    if target.role != Role.ASSISTANT or target.kind != MessageKind.ORDINARY or target.parent_id is None:
        raise InvalidInput("Only an assistant reply can be retried.", code="not_retryable")
    transcript_write_guard(context.conversation, action="retry", loaded=context.streaming)
    user_message = context.get(target.parent_id)
    return _Turn(content=user_message.content, stored=user_message)


@dataclass(frozen=True)
class SendPlan:
    """What a send composed for its one write (`_write_once`), and what it hands the stream: the messages to
    append (its stored prompt when built for the first time, the new user turn, the reply), its stored prompt
    when rebuilt in place, the new turn with the uploads its manifest lists, and the prepared reply."""

    appending: TranscriptAppend
    prompt_rebuilt: Message | None
    new_turn: Message | None
    attachment_ids: tuple[UUID, ...]
    imported: frozenset[UUID]
    also: tuple[str, ...]  # the conversation's columns the write saves beyond its head and last seq
    prepared: PreparedReply


def _plan(
    context: SendContext, config: ProviderConfig, turn: _Turn, *, asked: _Asked, preverified: PreverifiedAttachments
) -> SendPlan:
    """Compose from what was read: the stored prompt (a first send stores it before the turn it answers),
    the new user turn and its title, the request, and the reply (`streaming`, the new head; or `failed`,
    when the request is refused). Nothing is written and the conversation row only gains its new columns."""
    conversation = context.conversation
    context = send_inputs_read(context, text=turn.content)
    appending = TranscriptAppend(conversation)
    binding = config.binding()
    context, prompt_rebuilt = _prompt_composed(context, appending)
    user_message, new_turn, attachment_ids = turn.stored, None, ()
    if user_message is None:
        command = asked.command
        user_message = new_turn = _user_turn_composed(
            appending, command, parent=turn.parent, pinned=asked.pinned, binding=binding
        )
        attachment_ids = command.attachment_ids
        # Its uploads' parts, from the verification done before the lock, for the request built next.
        parts = preverified.new_turn_parts(attachment_ids) if attachment_ids else ()
        context = replace(context, new_turn=new_turn, new_turn_parts=parts)
        if not conversation.title:
            conversation.title = _first_title(command, preverified.names)
            conversation.title_auto = True
    written = {"appending": appending, "prompt_rebuilt": prompt_rebuilt, "new_turn": new_turn,
               "attachment_ids": attachment_ids, "imported": preverified.imported}
    tools = _tools_offered(context, config)
    try:
        request = reply_request_for(context, user_message, tools=tools)
    except RecallInBirthPeriod:
        refused = _refusal_composed(appending, user_message, binding)
        return SendPlan(**written, also=("title", "title_auto"), prepared=refused)
    assistant = appending.add(
        parent=user_message, role=Role.ASSISTANT, binding=binding, make_head=True, status=MessageStatus.STREAMING,
        lease_expires_at=lease_deadline(), metadata={"diagnostics": request.diagnostics},
    )
    conversation.in_view = request.in_view
    fresh = FreshReply(
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
    return SendPlan(**written, also=("title", "title_auto", "in_view"), prepared=fresh)


def _user_turn_composed(
    appending: TranscriptAppend, command: SendCommand, *, parent: Message | None, pinned: dict,
    binding: ProviderBinding,
) -> Message:
    """The new user turn, composed for the send's one write."""
    client_id = {"id": command.client_message_id} if command.client_message_id else {}
    user_message = appending.add(
        parent=parent, role=Role.USER, binding=binding, make_head=False, **client_id, **_turn_kind(command, pinned),
        content=command.content,
    )
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


def _write_once(plan: SendPlan) -> None:
    """The send's one write: the rebuilt prompt, every appended message and the conversation (its head, last
    seq and the columns in `also`), then the new turn's manifest (which claims its uploads; their blobs are
    in the conversation's store already, `attachments_preverify`)."""
    if plan.prompt_rebuilt is not None:
        static_prompt_rewrite(plan.prompt_rebuilt)
    transcript_write(plan.appending, also=plan.also)
    if plan.new_turn is not None and plan.attachment_ids:
        attachments_commit(message=plan.new_turn, attachment_ids=plan.attachment_ids, imported=plan.imported)


def _first_title(command: SendCommand, upload_names: tuple[str, ...]) -> str:
    """A new conversation's title from its first turn: its words, or (with none) its uploads' names (read
    before the lock); a check-in's title when its trigger opens the conversation."""
    if command.check_in is not None:
        return title_from_first_message(str(command.check_in.get("title") or command.content))
    title = title_from_first_message(command.content)
    if title or not command.attachment_ids:
        return title
    return title_from_first_message(command.content, list(upload_names))


def _pinned_character_metadata(character_id: int | None) -> dict:
    """The user turn's record of a character pinned for it (the choice only;
    the character's text enters the request as dynamic context, never stored)."""
    if character_id is None:
        return {}
    return {PINNED_CHARACTER_KEY: access_character(character_id).pk}


def _pinned_character_id(user_message: Message) -> int | None:
    pinned = (user_message.metadata or {}).get(PINNED_CHARACTER_KEY)
    return pinned if isinstance(pinned, int) and not isinstance(pinned, bool) else None


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


def _prompt_composed(context: SendContext, appending: TranscriptAppend) -> tuple[SendContext, Message | None]:
    """The context with the stored prompt this reply uses: built from the inputs `send_inputs_read` read (a
    first send, or a stale prompt) and composed for the send's one write, else the stored one as it is;
    and the stored prompt when it is rebuilt in place (saved by the write)."""
    if context.prompt_inputs is None:
        return context, None
    prompt = static_prompt_compose(appending, context.prompt, context.prompt_inputs)
    return replace(context, prompt=prompt), prompt if context.prompt is not None else None


def _tools_offered(context: SendContext, config: ProviderConfig) -> list[dict]:
    # Elion may suggest (a memory, issue 35; a check-in, issue 44) only in a `normal` chat, each with its switch.
    may_suggest = may_suggest_memories(context.conversation)
    row = context.settings_row
    return available_tools(
        archive_access=row.archive_access, web_search=row.web_search, api_selector=config.api_selector,
        image_generation=row.image_generation, memory_suggestions=row.memory_suggestions and may_suggest,
        check_in_proposals=row.check_in_proposals and may_suggest,
    )


RECALL_REFUSED = (
    "recall_in_birth_period",
    "This reply was not sent: the request carried automatically recalled context before the "
    "conversation's first reply, which is never allowed. This is an internal error; it has been logged.",
)


def _refusal_composed(appending: TranscriptAppend, user_message: Message, binding: ProviderBinding) -> ReplayedReply:
    """Final assembly refused a birth-period request with a recall section: the
    reply fails, stored as such (in the send's one write), and nothing reaches any provider path."""
    conversation = appending.conversation
    code, detail = RECALL_REFUSED
    logger.error(
        "refused to dispatch a birth-period request with an automatic recall section (conversation %s)",
        conversation.id,
    )
    assistant = appending.add(
        parent=user_message, role=Role.ASSISTANT, binding=binding, make_head=True, status=MessageStatus.FAILED,
        error=code, error_detail=detail,
    )
    return ReplayedReply(
        conversation_id=conversation.id,
        user_message_id=user_message.id,
        assistant_message_id=assistant.id,
        status=MessageStatus.FAILED,
        error={"error": code, "detail": detail},
    )
