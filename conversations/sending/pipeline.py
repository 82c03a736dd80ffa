"""The send pipeline: one event source behind SSE, WebSocket and JSON sends.

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

import asyncio
import contextlib
import contextvars
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from uuid import UUID

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connection as db_connection
from django.db import transaction
from django.utils import timezone

from continuity.compaction import compaction_projection
from continuity.dynamic_context import PINNED_CHARACTER_KEY, dynamic_context_build
from continuity.prompt_store import static_prompt_ensure
from continuity.request_assembly import AssembledRequest, HistoryTurn, RecallInBirthPeriod, assemble_request
from continuity.static_prompt import prior_thread_section_in
from conversations.access import (
    access_conversation,
    lease_deadline,
    streams_interrupt_expired,
)
from conversations.attachments.services import (
    attachment_ids_clean,
    attachment_parts_verified,
    attachments_commit,
    manifest_ids,
    manifests_for,
)
from conversations.models import AssistantSettings, Conversation, Message, MessageKind, MessageStatus, Role
from conversations.provider import gateway as provider_gateway
from conversations.provider.binding import binding_fields, provider_binding_gate
from conversations.provider.gateway import ProviderConfig, ProviderError
from conversations.sending import tool_loop
from conversations.sending.broadcast import STARTED, ReplyBroadcast
from conversations.settings_service import assistant_settings_get
from conversations.transcript.tree import is_projectable, live_branch, static_prompt_message, walk_to_root
from elion.errors import Conflict, InvalidInput, NotFound

logger = logging.getLogger(__name__)

AUTO_TITLE_CHARACTERS = 60
_UNSET = object()


@dataclass(frozen=True)
class SendCommand:
    conversation_id: UUID
    content: str
    client_message_id: UUID | None = None
    # `_UNSET`: continue from the head; None: start a new root (edit the first turn).
    parent_id: object = _UNSET
    pinned_character_id: int | None = None
    # Uploaded attachments for this turn, in manifest order.
    attachment_ids: tuple[UUID, ...] = ()


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


def validate_content(content: object, *, has_attachments: bool = False) -> str:
    if has_attachments and content in (None, ""):
        return ""  # an attachment-only turn
    if not isinstance(content, str) or (not content.strip() and not has_attachments):
        raise InvalidInput("A message needs some text or an attachment.", code="empty_message")
    limit = settings.ELION_MAX_MESSAGE_CHARACTERS
    if len(content) > limit:
        raise InvalidInput(
            f"A message can be at most {limit:,} characters; this one has {len(content):,}.",
            code="message_too_long",
        )
    return content


def _parse_uuid(value: object, name: str) -> UUID:
    try:
        return UUID(str(value))
    except (ValueError, TypeError) as exc:
        raise InvalidInput(f"{name} must be a UUID.", code=f"invalid_{name}") from exc


def send_command_from_payload(conversation_id: UUID, payload: dict) -> SendCommand:
    """Shape-check a send body (API.md "Sending") into a command."""
    if not isinstance(payload, dict):
        raise InvalidInput("The body must be a JSON object.", code="malformed_request")
    client_id = payload.get("client_message_id")
    parent = payload.get("parent_id", _UNSET)
    if parent is not _UNSET and parent is not None:
        parent = _parse_uuid(parent, "parent_id")
    pinned = payload.get("pinned_character_id")
    if pinned is not None and (isinstance(pinned, bool) or not isinstance(pinned, int)):
        raise InvalidInput("pinned_character_id must be an integer.", code="invalid_pinned_character_id")
    attachment_ids = attachment_ids_clean(payload.get("attachment_ids"))
    return SendCommand(
        conversation_id=conversation_id,
        content=validate_content(payload.get("content"), has_attachments=bool(attachment_ids)),
        attachment_ids=attachment_ids,
        client_message_id=_parse_uuid(client_id, "client_message_id") if client_id else None,
        parent_id=parent,
        pinned_character_id=pinned,
    )


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
    from conversations.characters import access_character

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


def _resolve_parent(conversation: Conversation, parent_id: object, rows: LoadedRows) -> Message | None:
    if parent_id is _UNSET:
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


def reply_tools(config: ProviderConfig, settings_row: AssistantSettings | None = None) -> list[dict]:
    row = settings_row or assistant_settings_get()
    return tool_loop.available_tools(
        archive_access=row.archive_access, web_search=row.web_search, api_selector=config.api_selector
    )


def reply_request_build(
    conversation: Conversation,
    prompt: Message | None = None,
    *,
    tools: list[dict] | None = None,
    branch: list[Message] | None = None,
    settings_row: AssistantSettings | None = None,
) -> AssembledRequest:
    """The model input for the reply at the head: stored rows in, request out.

    `branch` is the live branch when the caller already walked it;
    `settings_row` the AssistantSettings row when the caller already read it.
    """
    prompt = prompt or static_prompt_message(conversation)
    branch = live_branch(conversation) if branch is None else branch
    # Every blob the branch references is verified, also those a compaction now stands in for.
    attachment_parts = branch_attachment_parts(conversation, branch)
    # A compaction whose boundary lies on this branch stands in for the turns it covers.
    compacted = compaction_projection(conversation, branch)
    history = [
        HistoryTurn(
            m.role, m.content, tuple(tool_loop.project_tool_parts(m.parts)), attachment_parts.get(m.id, ())
        )
        for m in compacted.branch_after
        if is_projectable(m, has_attachments=m.id in attachment_parts)
    ]
    static_prompt = prompt.content if prompt else ""
    # Layer 2, fresh for this send and never stored: pinned character + keyword recall.
    dynamic = dynamic_context_build(
        conversation,
        branch=branch,
        static_prompt=static_prompt,
        history=[turn.content for turn in history],
        settings_row=settings_row,
    )
    return assemble_request(
        static_prompt=static_prompt,
        history=history,
        dynamic_context=dynamic.text,
        handoff_text=prior_thread_section_in(static_prompt),
        tool_definitions_text=tool_loop.tool_definitions_text(tools or []),
        input_budget_tokens=settings.ELION_INPUT_BUDGET_TOKENS,
        birth_period=dynamic.birth_period,
        compacted_summary=compacted.summary_text,
    )


def branch_attachment_parts(conversation: Conversation, branch: list[Message]) -> dict[UUID, tuple[dict, ...]]:
    """Every manifest on the branch, each blob re-verified, as request parts.

    Seed 004: resume revalidates every referenced blob before model
    projection; a missing or tampered one raises AttachmentUnavailable (409,
    naming it), which rolls the caller's transaction back.
    """
    return attachment_parts_verified(conversation.id, manifests_for(m for m in branch if m.role == Role.USER))


# --- Streaming -------------------------------------------------------------


def _add(total: int | None, more: int | None) -> int | None:
    return more if total is None else total + (more or 0)


_RUNNING_TASKS: set[asyncio.Task] = set()


def persist(fn):
    """Run a reply's database write on a worker thread of its own.

    Not thread-sensitive: the one shared sync thread may be busy running a
    sync middleware chain that is itself waiting for this reply (a
    `?stream=false` send), which would deadlock.
    The worker's connection is closed after each write, which hands a pooled
    PostgreSQL connection back: worker threads outlive no request that would
    otherwise close it, and a pool drained by idle workers stalls every send.
    """

    def write(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        finally:
            db_connection.close()

    return sync_to_async(write, thread_sensitive=False)


def _still_wanted(message_id: UUID):
    """The reply's row while it streams and nobody asked it to stop."""
    return Message.objects.filter(pk=message_id, status=MessageStatus.STREAMING, stop_requested_at__isnull=True)


def _flush_partial(message_id: UUID, content: str) -> bool:
    """Store the partial text; False when the reply was asked to stop (or ended elsewhere)."""
    return bool(_still_wanted(message_id).update(content=content, lease_expires_at=lease_deadline(),
                                                 updated_at=timezone.now()))


def _renew_lease(message_id: UUID) -> bool:
    return bool(_still_wanted(message_id).update(lease_expires_at=lease_deadline()))


def _stop_was_requested(message_id: UUID) -> bool:
    return Message.objects.filter(pk=message_id, stop_requested_at__isnull=False).exists()


STOPPED = ("stopped", "Stopped before the reply finished; the partial text is kept.")
# The longest a run waits for the provider's first event before reading the stop flag.
STOP_CHECK_GRACE_SECONDS = 0.5


class ReplyStopped(Exception):
    """The owner asked this reply to stop."""


def _finalise(message_id: UUID, content: str, status: str, error: str = "", detail: str = "", usage=None) -> None:
    message = Message.objects.get(pk=message_id)
    message.content = content
    message.status = status
    message.error = error
    message.error_detail = detail
    message.lease_expires_at = None
    if usage is not None:
        message.metadata = {**message.metadata, "usage": usage}
    message.save(update_fields=["content", "status", "error", "error_detail", "lease_expires_at", "metadata", "updated_at"])


class ReplyRun:
    """One assistant reply streaming from the provider, owned by no transport."""

    def __init__(self, prepared: PreparedReply):
        self.prepared = prepared
        self.queue: asyncio.Queue[tuple[str, dict]] = asyncio.Queue()
        self.broadcast = ReplyBroadcast(prepared.conversation_id, prepared.assistant_message_id)
        self.stop_requested = False
        self._round: asyncio.Task | None = None
        # Inline and trailing flushes write one at a time, newest text last.
        self._flush_lock = asyncio.Lock()
        # Set by the provider's first event: the stop flag is read after it (`_stop_recorded`).
        self.provider_answered = asyncio.Event()

    def emit(self, name: str, data: dict) -> None:
        self.queue.put_nowait((name, data))
        self.broadcast.publish(name, data)

    def stop(self) -> None:
        """End the provider call now; the run keeps the partial text as `interrupted`."""
        if self.stop_requested:
            return
        self.stop_requested = True
        if self._round is not None and not self._round.done():
            self._round.cancel()

    def start(self) -> None:
        # A fresh context: the request's context ties thread-sensitive
        # sync_to_async calls to the request's executor, which quits when the
        # response ends, while this reply must outlive the request.
        task = asyncio.get_running_loop().create_task(self._run(), context=contextvars.Context())
        _RUNNING_TASKS.add(task)
        task.add_done_callback(_RUNNING_TASKS.discard)

    async def _run(self) -> None:
        prepared = self.prepared
        message_id = prepared.assistant_message_id
        self.text_parts: list[str] = []
        self.length = 0  # characters so far: the `seq` of the latest delta
        self.unflushed = 0
        self.last_flush = float("-inf")  # the first text is persisted at once
        parts: list[dict] = []  # this reply's stored tool calls and results
        usage = {"input_tokens": None, "output_tokens": None}
        loop = asyncio.get_running_loop()
        heartbeat = trailing = None
        try:
            self.broadcast.start(on_stop=self.stop, stop_recorded=lambda: self._stop_recorded(message_id))
            self.broadcast.publish(STARTED, {"user_message_id": str(prepared.user_message_id)})
            heartbeat = loop.create_task(self._heartbeat(message_id))
            trailing = loop.create_task(self._trailing_flush(message_id))
            # Round 0 is the ordinary reply; each round that asks for tools is
            # answered and followed by another request, at most ELION_MAX_TOOL_ROUNDS times.
            for round_number in range(settings.ELION_MAX_TOOL_ROUNDS + 1):
                messages = prepared.request.messages + tool_loop.project_tool_parts(parts)
                calls, round_usage = await self._stream_round_stoppable(messages)
                usage = {key: _add(usage[key], round_usage[key]) for key in usage}
                if not calls:
                    await persist(_finalise)(message_id, "".join(self.text_parts), MessageStatus.COMPLETE, usage=usage)
                    self.emit("done", {"message_id": str(message_id), "status": MessageStatus.COMPLETE})
                    return
                if round_number == settings.ELION_MAX_TOOL_ROUNDS:
                    break
                await tool_loop.tool_round_run(
                    calls, round_number=round_number, message_id=message_id, parts=parts,
                    offered=prepared.tools, context=prepared.tool_context, emit=self.emit, persist=persist,
                )
            raise ProviderError(
                "tool_round_limit",
                f"The model asked for tools more than {settings.ELION_MAX_TOOL_ROUNDS} times; the partial reply is kept.",
            )
        except ReplyStopped:
            for task in (heartbeat, trailing):
                if task is not None:
                    task.cancel()
            await persist(_finalise)(message_id, "".join(self.text_parts), MessageStatus.INTERRUPTED, *STOPPED)
            self.emit("done", {"message_id": str(message_id), "status": MessageStatus.INTERRUPTED})
        except ProviderError as exc:
            await persist(_finalise)(message_id, "".join(self.text_parts), MessageStatus.FAILED, exc.code, exc.detail)
            self.emit("error", {"error": exc.code, "detail": exc.detail})
            self.emit("done", {"message_id": str(message_id), "status": MessageStatus.FAILED})
        except Exception:  # noqa: BLE001 - a reply must end in a stored state, whatever broke
            logger.exception("reply %s failed unexpectedly", message_id)
            detail = "The reply failed because of an internal error; the partial text is kept."
            await persist(_finalise)(message_id, "".join(self.text_parts), MessageStatus.FAILED, "internal_error", detail)
            self.emit("error", {"error": "internal_error", "detail": detail})
            self.emit("done", {"message_id": str(message_id), "status": MessageStatus.FAILED})
        finally:
            for task in (heartbeat, trailing):
                if task is not None:
                    task.cancel()
            await self.broadcast.close()

    async def _stream_round_stoppable(self, messages: list[dict]) -> tuple[list, dict]:
        """`_stream_round` in a task of its own, so a stop can end the provider call."""
        if self.stop_requested:
            raise ReplyStopped
        self._round = asyncio.get_running_loop().create_task(self._stream_round(messages))
        try:
            return await self._round
        except asyncio.CancelledError:
            # Our round was cancelled by `stop`, not this task by its owner.
            if self.stop_requested and not asyncio.current_task().cancelling():
                raise ReplyStopped from None
            self._round.cancel()
            raise
        finally:
            self._round = None

    async def _stop_recorded(self, message_id: UUID) -> bool:
        """The database's stop flag, read once the provider has answered (or
        `STOP_CHECK_GRACE_SECONDS` have passed).

        It catches a stop recorded before the run listened for stop messages.
        Read at once, its query would compete for the CPU with building and
        sending the provider request, on the way to the first token; a stop it
        finds still ends the reply at its first event. Later stops arrive as
        messages, and the lease renewal reads the flag again.
        """
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.provider_answered.wait(), STOP_CHECK_GRACE_SECONDS)
        return await persist(_stop_was_requested)(message_id)

    async def _flush(self, message_id: UUID) -> None:
        async with self._flush_lock:
            if not self.unflushed:
                return
            self.unflushed, self.last_flush = 0, time.monotonic()
            if not await persist(_flush_partial)(message_id, "".join(self.text_parts)):
                self.stop()

    async def _trailing_flush(self, message_id: UUID) -> None:
        """Text that arrived just before the stream paused is stored within the interval too."""
        interval = settings.ELION_FLUSH_INTERVAL_SECONDS
        while True:
            await asyncio.sleep(interval)
            if self.unflushed and time.monotonic() - self.last_flush >= interval:
                try:
                    await self._flush(message_id)
                except Exception:  # noqa: BLE001 - the next flush or the final write stores the text
                    logger.warning("reply %s: trailing flush failed", message_id, exc_info=True)

    async def _stream_round(self, messages: list[dict]) -> tuple[list, dict]:
        """One provider request: stream its text, collect its tool calls and usage."""
        message_id = self.prepared.assistant_message_id
        calls: list[provider_gateway.ToolCallRequested] = []
        usage = None
        async for event in provider_gateway.stream_reply(self.prepared.config, messages, self.prepared.tools):
            self.provider_answered.set()
            if isinstance(event, provider_gateway.TextDelta):
                if not event.text:
                    continue
                self.text_parts.append(event.text)
                self.length += len(event.text)
                self.unflushed += len(event.text)
                self.emit("delta", {"text": event.text, "seq": self.length})
                if self.unflushed >= settings.ELION_FLUSH_CHARACTERS or (
                    time.monotonic() - self.last_flush >= settings.ELION_FLUSH_INTERVAL_SECONDS
                ):
                    await self._flush(message_id)
            elif isinstance(event, provider_gateway.ToolCallRequested):
                calls.append(event)
            elif isinstance(event, provider_gateway.Completed):
                usage = {"input_tokens": event.input_tokens, "output_tokens": event.output_tokens}
        if usage is None:
            raise ProviderError("provider_connection_lost", "The provider's stream ended before the reply was complete.")
        return calls, usage

    async def _heartbeat(self, message_id: UUID) -> None:
        interval = max(settings.ELION_STREAM_LEASE_SECONDS / 3, 0.2)
        while True:
            await asyncio.sleep(interval)
            if not await persist(_renew_lease)(message_id):
                self.stop()


def reply_events(prepared: PreparedReply) -> AsyncIterator[tuple[str, dict]]:
    """Start the reply now and return its events, from the user turn to `done`.

    Not a generator itself: the provider stream starts at once, so a client
    that leaves before reading anything still gets its reply stored.
    Precondition: called inside the running event loop.
    """
    run = None
    if prepared.replay is None:
        run = ReplyRun(prepared)
        run.start()
    return _events(prepared, run)


async def _events(prepared: PreparedReply, run: ReplyRun | None) -> AsyncIterator[tuple[str, dict]]:
    yield "user_message", {"id": str(prepared.user_message_id)}
    yield "assistant_message", {"id": str(prepared.assistant_message_id)}
    if run is None:
        replay = prepared.replay
        if replay.get("diagnostics"):
            yield "diagnostics", replay["diagnostics"]
        if replay["status"] == MessageStatus.STREAMING:
            # The same turn sent again while its reply still streams (another
            # tab, a reload, maybe another process): follow that reply live.
            async for event in _follow(prepared):
                yield event
            return
        if replay.get("error"):
            yield "error", replay["error"]
        if replay["content"]:
            yield "delta", {"text": replay["content"], "seq": len(replay["content"])}
        yield "done", {"message_id": str(prepared.assistant_message_id), "status": replay["status"]}
        return
    yield "diagnostics", prepared.request.diagnostics
    while True:
        name, data = await run.queue.get()
        yield name, data
        if name == "done":
            return


async def _follow(prepared: PreparedReply) -> AsyncIterator[tuple[str, dict]]:
    from conversations.sending.watch import ReplyWatch

    watch = ReplyWatch(conversation_id=prepared.conversation_id, message_id=prepared.assistant_message_id)
    await watch.open()
    try:
        async for event in watch.events(announce=False):
            yield event
    finally:
        await watch.close()
