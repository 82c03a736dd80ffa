"""Preparing a send or a retry: one short transaction before any provider I/O.

1. `send_prepare` / `retry_prepare` (one transaction, no provider I/O): check
   the input, commit the user turn, create the assistant message as
   `streaming`, store the static prompt on the first send, and assemble the
   model request from stored rows.
2. `ReplyRun` streams from the provider in its own asyncio task, flushing
   partial text to the database at once for the first delta, then at most
   every 250 ms (also when the stream pauses) or 2,000 characters, and
   renewing the stream lease, then finalises `complete` or `failed` (or
   `interrupted` when the owner stops it). The task does not belong to the
   transport: a client that goes away stops listening, not persisting.

Events are `(name, data)` pairs named as in API.md "Sending". Each delta
carries `seq`: the reply's length in characters once the delta is appended,
so the text flushed to the database always ends at a known `seq` (its
length), and a watcher joins stored text and live deltas without gap or
duplicate (`conversations.sending.watch`). Every event is also published to the
conversation's channel-layer group (`conversations.sending.broadcast`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from uuid import UUID

from django.db import transaction
from django.utils import timezone

from continuity.dynamic_context import PINNED_CHARACTER_KEY
from continuity.prompt_store import static_prompt_ensure
from continuity.request_assembly import AssembledRequest, RecallInBirthPeriod
from conversations.access import access_conversation
from conversations.assistant_settings import assistant_settings_get
from conversations.attachments.services import (
    attachments_commit,
    manifest_ids,
)
from conversations.characters import access_character
from conversations.models import AssistantSettings, Conversation, Message, MessageKind, MessageStatus, Role
from conversations.provider.binding import binding_fields, provider_binding_gate
from conversations.provider.gateway import ProviderConfig
from conversations.sending import tool_loop
from conversations.sending.commands import FROM_HEAD, ParentChoice, SendCommand
from conversations.sending.request import reply_request_build, reply_tools
from conversations.transcript.leases import lease_deadline, streams_interrupt_expired
from conversations.transcript.tree import walk_to_root
from elion.errors import Conflict, InvalidInput, NotFound

logger = logging.getLogger(__name__)




AUTO_TITLE_CHARACTERS = 60


@dataclass
class PreparedReply:
    conversation_id: UUID
    user_message_id: UUID
    assistant_message_id: UUID
    config: ProviderConfig | None = None
    request: AssembledRequest | None = None
    # The tools offered to the model for this reply, and what they may see.
    tools: list = field(default_factory=list)
    tool_context: tool_loop.ToolContext | None = None
    # Set when a repeated client_message_id finds a reply already stored.
    replay: dict | None = None
    events: list = field(default_factory=list)


def _next_seq(conversation: Conversation) -> int:
    conversation.last_seq += 1
    return conversation.last_seq


@dataclass
class LoadedRows:
    """Every stored row of one conversation, read in one query under its lock.

    The live-stream check, the recorded provider binding, the parent, the
    stored prompt and the history all come from these rows, so a send costs a
    handful of statements however long the thread is.
    """

    tree: dict[UUID, Message]
    prompt: Message | None

    @classmethod
    def load(cls, conversation: Conversation) -> LoadedRows:
        tree: dict[UUID, Message] = {}
        prompt = None
        for message in Message.objects.filter(conversation=conversation):
            if message.role == Role.SYSTEM:
                prompt = message
            else:
                tree[message.id] = message
        return cls(tree=tree, prompt=prompt)

    def get(self, message_id: object) -> Message:
        try:
            return self.tree[UUID(str(message_id))]
        except (KeyError, ValueError, TypeError) as exc:
            raise NotFound("No message with that id in this conversation.", code="message_not_found") from exc

    def latest_reply_to(self, user_message: Message) -> Message | None:
        replies = [
            m for m in self.tree.values()
            if m.parent_id == user_message.id and m.role == Role.ASSISTANT and m.status != MessageStatus.FAILED
        ]
        return max(replies, key=lambda m: m.seq, default=None)


def _ensure_no_live_stream(conversation: Conversation, rows: LoadedRows) -> None:
    streaming = [m for m in rows.tree.values() if m.status == MessageStatus.STREAMING]
    if not streaming:
        return
    now = timezone.now()
    if any(m.lease_expires_at is not None and m.lease_expires_at > now for m in streaming):
        raise Conflict(
            "A reply is still streaming in this conversation; wait for it to finish.", code="reply_in_progress"
        )
    # Their process died (the lease ran out): keep the text as `interrupted`.
    streams_interrupt_expired(conversation)
    for message in streaming:
        message.status = MessageStatus.INTERRUPTED


@transaction.atomic
def send_prepare(command: SendCommand) -> PreparedReply:
    """Commit the user turn and a `streaming` assistant message; no provider I/O."""
    # An unknown pinned character is a 404 before anything is read or written.
    pinned = _pinned_character_metadata(command.pinned_character_id)
    # Row lock: sends, rewinds and first-prompt creation in one conversation
    # are serialised, so two sends can never both pass the streaming check.
    conversation = access_conversation(command.conversation_id, lock=True)
    if conversation.trashed:
        raise Conflict("This conversation is in the trash; restore it to send.", code="conversation_trashed")
    rows = LoadedRows.load(conversation)
    # Seed 004: the full binding tuple is validated before any replay or provider I/O.
    config = provider_binding_gate(rows.tree.values())

    if command.client_message_id is not None:
        if command.client_message_id in rows.tree:
            return _prepare_for_repeated_turn(conversation, rows, rows.tree[command.client_message_id], command, config)
        if Message.objects.filter(pk=command.client_message_id).exists():
            raise Conflict("client_message_id is already used by another message.", code="client_message_id_conflict")

    _ensure_no_live_stream(conversation, rows)
    parent = _resolve_parent(conversation, command.parent_id, rows)
    # The first send stores the static prompt before the turn it answers.
    prompt, settings_row = _stored_prompt(conversation, rows)
    client_id = {"id": command.client_message_id} if command.client_message_id else {}
    user_message = Message.objects.create(
        **client_id,
        conversation=conversation,
        parent=parent,
        seq=_next_seq(conversation),
        role=Role.USER,
        content=command.content,
        metadata=pinned,
        **binding_fields(config),
    )
    rows.tree[user_message.id] = user_message
    attached = attachments_commit(message=user_message, attachment_ids=command.attachment_ids)
    if not conversation.title:
        title_source = command.content if command.content.strip() else ", ".join(a.name for a in attached)
        conversation.title = " ".join(title_source.split())[:AUTO_TITLE_CHARACTERS]
    return _start_reply(conversation, rows, user_message, config, prompt, settings_row)


def _pinned_character_metadata(character_id: int | None) -> dict:
    """The user turn's record of a character pinned for it (the choice only;
    the character's text enters the request as dynamic context, never stored)."""
    if character_id is None:
        return {}

    return {PINNED_CHARACTER_KEY: access_character(character_id).pk}


def _prepare_for_repeated_turn(
    conversation: Conversation, rows: LoadedRows, existing: Message, command: SendCommand, config: ProviderConfig
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
    reply = rows.latest_reply_to(existing)
    if reply is not None:
        if reply.status == MessageStatus.STREAMING and (
            reply.lease_expires_at is None or reply.lease_expires_at <= timezone.now()
        ):
            streams_interrupt_expired(conversation)
            reply.status = MessageStatus.INTERRUPTED
        return PreparedReply(
            conversation_id=conversation.id,
            user_message_id=existing.id,
            assistant_message_id=reply.id,
            replay={"content": reply.content, "status": reply.status, "diagnostics": reply.metadata.get("diagnostics")},
        )
    # The turn was stored but its reply failed or never started: answer it now.
    _ensure_no_live_stream(conversation, rows)
    return _start_reply_with_prompt(conversation, rows, existing, config)


def _resolve_parent(conversation: Conversation, parent_id: UUID | None | ParentChoice, rows: LoadedRows) -> Message | None:
    if parent_id is FROM_HEAD:
        return rows.tree.get(conversation.head_id) if conversation.head_id else None
    if parent_id is None:
        return None
    parent = rows.get(parent_id)
    if parent.role != Role.ASSISTANT or parent.status == MessageStatus.STREAMING:
        raise InvalidInput(
            "parent_id must name a finished assistant message (or be null to start from the beginning).",
            code="invalid_parent",
        )
    return parent


@transaction.atomic
def retry_prepare(*, conversation_id: UUID, message_id: UUID | str) -> PreparedReply:
    """Regenerate an assistant reply as a new sibling under the same user turn."""
    conversation = access_conversation(conversation_id, lock=True)
    if conversation.trashed:
        raise Conflict("This conversation is in the trash; restore it to retry.", code="conversation_trashed")
    rows = LoadedRows.load(conversation)
    config = provider_binding_gate(rows.tree.values())
    target = rows.get(message_id)
    if target.role != Role.ASSISTANT or target.kind != MessageKind.ORDINARY or target.parent_id is None:
        raise InvalidInput("Only an assistant reply can be retried.", code="not_retryable")
    _ensure_no_live_stream(conversation, rows)
    user_message = rows.tree[target.parent_id]
    return _start_reply_with_prompt(conversation, rows, user_message, config)


def _stored_prompt(conversation: Conversation, rows: LoadedRows) -> tuple[Message, AssistantSettings]:
    """The stored prompt (built on a first send) and the AssistantSettings row,
    read once: the prompt, the tools and the dynamic context all use it.
    The prompt's seq is saved with the send's conversation update (`_start_reply`)."""
    settings_row = assistant_settings_get()
    return static_prompt_ensure(conversation, rows.prompt, settings_row=settings_row, save_seq=False), settings_row


def _start_reply_with_prompt(
    conversation: Conversation, rows: LoadedRows, user_message: Message, config: ProviderConfig
) -> PreparedReply:
    prompt, settings_row = _stored_prompt(conversation, rows)
    return _start_reply(conversation, rows, user_message, config, prompt, settings_row)


def _start_reply(
    conversation: Conversation,
    rows: LoadedRows,
    user_message: Message,
    config: ProviderConfig,
    prompt: Message,
    settings_row: AssistantSettings,
) -> PreparedReply:
    """Assemble the request, create the streaming assistant message, move the head.

    Saves the conversation's `last_seq` (also for the stored prompt's seq, which
    `static_prompt_ensure(save_seq=False)` left to this save) in either outcome.
    """
    tools = reply_tools(config, settings_row)
    branch = walk_to_root(rows.tree, user_message.id)
    try:
        request = reply_request_build(conversation, prompt, tools=tools, branch=branch, settings_row=settings_row)
    except RecallInBirthPeriod:
        return _refuse_reply(conversation, user_message, config)
    assistant = Message.objects.create(
        conversation=conversation,
        parent=user_message,
        seq=_next_seq(conversation),
        role=Role.ASSISTANT,
        status=MessageStatus.STREAMING,
        lease_expires_at=lease_deadline(),
        metadata={"diagnostics": request.diagnostics},
        **binding_fields(config),
    )
    conversation.head = assistant
    conversation.save(update_fields=["head", "last_seq", "title", "updated_at"])
    return PreparedReply(
        conversation_id=conversation.id,
        user_message_id=user_message.id,
        assistant_message_id=assistant.id,
        config=config,
        request=request,
        tools=tools,
        tool_context=tool_loop.ToolContext(conversation_id=conversation.id, persona=conversation.persona),
    )


RECALL_REFUSED = (
    "recall_in_birth_period",
    "This reply was not sent: the request carried automatically recalled context before the "
    "conversation's first reply, which is never allowed. This is an internal error; it has been logged.",
)


def _refuse_reply(conversation: Conversation, user_message: Message, config: ProviderConfig) -> PreparedReply:
    """Final assembly refused a birth-period request with a recall section: the
    reply fails, stored as such, and nothing reaches any provider path."""
    code, detail = RECALL_REFUSED
    logger.error(
        "refused to dispatch a birth-period request with an automatic recall section (conversation %s)",
        conversation.id,
    )
    assistant = Message.objects.create(
        conversation=conversation,
        parent=user_message,
        seq=_next_seq(conversation),
        role=Role.ASSISTANT,
        status=MessageStatus.FAILED,
        error=code,
        error_detail=detail,
        **binding_fields(config),
    )
    conversation.head = assistant
    conversation.save(update_fields=["head", "last_seq", "title", "updated_at"])
    return PreparedReply(
        conversation_id=conversation.id,
        user_message_id=user_message.id,
        assistant_message_id=assistant.id,
        replay={"content": "", "status": MessageStatus.FAILED, "error": {"error": code, "detail": detail}},
    )
