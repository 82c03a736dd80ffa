"""The reply run: stream from the provider in an asyncio task of its own and persist as it goes.

`ReplyRun` flushes partial text at once for the first delta, then at most
every 250 ms (also when the stream pauses) or 2,000 characters, renews the
stream lease, and finalises `complete` or `failed` (or `interrupted` when
the owner stops it). The task does not belong to the transport: a client
that goes away stops listening, not persisting.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar
from uuid import UUID

from django.conf import settings
from django.db import OperationalError
from django.db.models import QuerySet
from django.utils import timezone

from conversations.sending import images, tool_loop
from conversations.sending.broadcast import STARTED, ReplyBroadcast, done_data
from conversations.sending.persist import persist
from conversations.sending.prepare import FreshReply
from elion.base.database_errors import database_outage
from operations.usage import USAGE_KEYS  # the provider-reported usage stored on each reply, summed over rounds
from transcript.append import reply_measure
from transcript.citations import citations_clean
from transcript.leases import lease_deadline
from transcript.models import Message, MessageStatus
from transcript.provider import gateway as provider_gateway
from transcript.provider.gateway import ProviderError
from transcript.provider.wire import REASONING_ROLE
from transcript.search_index import message_search_index_sync
from transcript.tool_pairing import (
    has_carried_reasoning,
    output_item_part,
    project_tool_parts,
    reasoning_part,
    reasoning_parts_drop,
    reasoning_parts_forget,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Reply tasks in flight: the event loop holds tasks only weakly.
_RUNNING_TASKS: set[asyncio.Task] = set()


def _add(total: int | None, more: int | None) -> int | None:
    return more if total is None else total + (more or 0)


def _still_wanted(message_id: UUID) -> QuerySet[Message]:
    """The reply's row while it streams and nobody asked it to stop."""
    return Message.objects.filter(pk=message_id, status=MessageStatus.STREAMING, stop_requested_at__isnull=True)


def _flush_partial(message_id: UUID, content: str) -> bool:
    """Store the partial text, and the branch's token measure through it (nothing is under it yet); False
    when the reply was asked to stop (or ended elsewhere)."""
    return bool(_still_wanted(message_id).update(content=content, lease_expires_at=lease_deadline(),
                                                 updated_at=timezone.now(), branch_tokens=reply_measure(content)))


def _renew_lease(message_id: UUID) -> bool:
    return bool(_still_wanted(message_id).update(lease_expires_at=lease_deadline()))


def _stop_was_requested(message_id: UUID) -> bool:
    return Message.objects.filter(pk=message_id, stop_requested_at__isnull=False).exists()



# The provider could not verify reasoning carried from earlier (the gateway's code for it).
REASONING_REJECTED = "provider_reasoning_rejected"

STOPPED = ("stopped", "Stopped before the reply finished; the partial text is kept.")

# Why a reply was cut off, in words (`incomplete_details.reason` / `finish_reason`).
CUT_OFF_REASONS = {
    "max_output_tokens": "it reached the longest reply allowed",
    "length": "it reached the longest reply allowed",
    "content_filter": "the provider's content filter stopped it",
}


def cut_off_detail(reason: str) -> str:
    """The sentence shown under a cut-off reply."""
    why = CUT_OFF_REASONS.get(reason, f"the provider ended it early ({reason})")
    return f"The reply was cut off: {why}. Continue asks for the rest."


# The longest a run waits for the provider's first event before reading the stop flag.
STOP_CHECK_GRACE_SECONDS = 0.5


class ReplyStopped(Exception):
    """The owner asked this reply to stop."""


def _finalise(
    message_id: UUID, content: str, status: str, error: str = "", detail: str = "", *,
    parts: list[dict], metadata: dict,
) -> None:
    """The reply's final state: text, status, every stored part (reasoning included), and what the run
    learnt (`metadata`: usage, citations, thought seconds, a dropped reasoning) merged into its metadata."""
    message = Message.objects.annotate(final_measure=reply_measure(content)).get(pk=message_id)
    message.content = content
    message.branch_tokens = message.final_measure  # its share, now that its text is known
    message.status = status
    message.error = error
    message.error_detail = detail
    message.lease_expires_at = None
    message.parts = parts
    message.metadata = {**message.metadata, **metadata}
    message.save(update_fields=[
        "content", "status", "error", "error_detail", "lease_expires_at", "parts", "metadata", "updated_at", "branch_tokens"
    ])


class ReplyRun:
    """One assistant reply streaming from the provider, owned by no transport; its constructor sets every field."""

    def __init__(self, prepared: FreshReply) -> None:
        self.prepared = prepared
        self.queue: asyncio.Queue[tuple[str, dict]] = asyncio.Queue()
        self.broadcast = ReplyBroadcast(prepared.conversation_id, prepared.assistant_message_id)
        self.stop_requested = False
        self._round: asyncio.Task | None = None
        # Inline and trailing flushes write one at a time, newest text last.
        self._flush_lock = asyncio.Lock()
        # Set by the provider's first event: the stop flag is read after it (`_stop_recorded`).
        self.provider_answered = asyncio.Event()
        # What the reply gathers as it streams (a run is started once).
        self.text_parts: list[str] = []
        self.length = 0  # characters so far: the `seq` of the latest delta
        self.unflushed = 0
        self.last_flush = float("-inf")  # the first text is persisted at once
        self.parts: list[dict] = []  # this reply's stored reasoning, tool calls and results
        self.citations: list[dict] = []
        self.thought_seconds: float | None = None
        self.reasoning_dropped: dict | None = None
        self.refusal = False  # a `refusal` part streamed: the model declined (metadata.refusal)
        self.incomplete_reason: str | None = None  # the provider cut the reply off (status `incomplete`)
        self.history = prepared.request.messages  # the request before this reply's own parts

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

    def start(self) -> asyncio.Task:
        """Start the reply in its own task (a caller with no listener awaits it: a check-in's run)."""
        # A fresh context: the request's context ties thread-sensitive
        # sync_to_async calls to the request's executor, which quits when the
        # response ends, while this reply must outlive the request.
        task = asyncio.get_running_loop().create_task(self._run(), context=contextvars.Context())
        _RUNNING_TASKS.add(task)
        task.add_done_callback(_RUNNING_TASKS.discard)
        return task

    def _learnt(self, usage: dict | None = None) -> dict:
        """What this run adds to the reply's metadata when it ends."""
        learnt: dict = {} if usage is None else {"usage": usage}
        if self.citations:
            learnt["citations"] = citations_clean(self.citations, self.length)
        if self.thought_seconds is not None:
            learnt["thought_seconds"] = round(self.thought_seconds, 1)
        if self.reasoning_dropped is not None:
            learnt["reasoning_dropped"] = self.reasoning_dropped
        if self.refusal:
            learnt["refusal"] = True
        if self.incomplete_reason is not None:
            learnt["incomplete_reason"] = self.incomplete_reason
        return learnt

    async def _finish(self, status: str, error: str = "", detail: str = "", usage: dict | None = None) -> None:
        await persist(_finalise)(
            self.prepared.assistant_message_id, "".join(self.text_parts), status, error, detail,
            parts=list(self.parts), metadata=self._learnt(usage),
        )

    async def _finish_once_possible(self, status: str, error: str, detail: str) -> None:
        """`_finish`, tried again every second until it is stored or the reply's lease would have run
        out (then the lease sweep stores it `interrupted`): a database back within that time gets
        the reply's final state at once."""
        deadline = time.monotonic() + settings.ELION_STREAM_LEASE_SECONDS
        while True:
            try:
                await self._finish(status, error, detail)
                return
            except Exception:  # noqa: BLE001 - the database is still away
                if time.monotonic() >= deadline:
                    logger.warning("reply %s: its final state was not stored", self.prepared.assistant_message_id)
                    return
                await asyncio.sleep(1)

    async def _run(self) -> None:
        prepared = self.prepared
        message_id = prepared.assistant_message_id
        parts = self.parts
        usage: dict[str, int | None] = dict.fromkeys(USAGE_KEYS)
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
                calls, round_usage = await self._round_with_reasoning_fallback(round_number)
                usage = {key: _add(usage[key], round_usage[key]) for key in usage}
                if self.incomplete_reason is not None:
                    # Cut off (output limit, content filter): the text so far is the reply; no call of a
                    # cut-off round runs. A send asking to continue picks it up.
                    await self._finish(MessageStatus.INCOMPLETE, detail=cut_off_detail(self.incomplete_reason), usage=usage)
                    self.emit("done", done_data(message_id, MessageStatus.INCOMPLETE, self._learnt()))
                    return
                if not calls:
                    await self._finish(MessageStatus.COMPLETE, usage=usage)
                    self.emit("done", done_data(message_id, MessageStatus.COMPLETE, self._learnt()))
                    return
                if round_number == settings.ELION_MAX_TOOL_ROUNDS:
                    break
                await tool_loop.tool_round_run(
                    calls, round_number=round_number, message_id=message_id, parts=parts,
                    offered=prepared.tools, context=prepared.tool_context, emit=self.emit, persist=persist,
                    async_tools={name: self._stoppable_tool(tool) for name, tool in images.ASYNC_TOOLS.items()},
                )
            raise ProviderError(
                "tool_round_limit",
                f"The model asked for tools more than {settings.ELION_MAX_TOOL_ROUNDS} times; the partial reply is kept.",
            )
        except ReplyStopped:
            for task in (heartbeat, trailing):
                if task is not None:
                    task.cancel()
            await self._finish(MessageStatus.INTERRUPTED, *STOPPED)
            self.emit("done", {"message_id": str(message_id), "status": MessageStatus.INTERRUPTED})
        except ProviderError as exc:
            await self._finish(MessageStatus.FAILED, exc.code, exc.detail)
            self.emit("error", {"error": exc.code, "detail": exc.detail})
            self.emit("done", {"message_id": str(message_id), "status": MessageStatus.FAILED})
        except Exception as exc:  # noqa: BLE001 - a reply must end in a stored state, whatever broke
            outage = database_outage(exc)
            if outage is not None:
                # The database failed under the reply: the client hears it now; the text last flushed
                # stays stored, and the reply is stored `interrupted` once the database is back (or by
                # the lease sweep).
                logger.warning("reply %s: %s", message_id, outage.code)
                self.emit("error", {"error": outage.code, "detail": outage.detail})
                self.emit("done", {"message_id": str(message_id), "status": MessageStatus.INTERRUPTED})
                await self._finish_once_possible(MessageStatus.INTERRUPTED, outage.code, outage.detail)
                return
            logger.exception("reply %s failed unexpectedly", message_id)
            detail = "The reply failed because of an internal error; the partial text is kept."
            await self._finish(MessageStatus.FAILED, "internal_error", detail)
            self.emit("error", {"error": "internal_error", "detail": detail})
            self.emit("done", {"message_id": str(message_id), "status": MessageStatus.FAILED})
        finally:
            for task in (heartbeat, trailing):
                if task is not None:
                    task.cancel()
            await self.broadcast.close()
            await self._index_turns()

    async def _index_turns(self) -> None:
        """After the reply is stored (and `done` sent): tokenise this turn's search-index rows now,
        so the next send finds nothing pending and neither it nor its lock pays for them."""
        try:
            await persist(message_search_index_sync)()
        except Exception as exc:  # noqa: BLE001 - the index is filled again by the next send or search
            if not isinstance(exc, OperationalError) and database_outage(exc) is None:
                logger.exception("indexing after reply %s failed", self.prepared.assistant_message_id)
                return
            # A timeout or an outage: one line; the rows stay pending for the minute's index job.
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
            logger.warning("indexing after reply %s timed out (%s); the minute's index job retries it",
                           self.prepared.assistant_message_id, reason)

    async def _round_with_reasoning_fallback(self, round_number: int) -> tuple[list, dict]:
        """One round's request: the history, then this reply's parts so far (its reasoning and tool rounds).

        A provider that cannot verify the reasoning carried from earlier turns (another key or model made
        it) gets the same request once more without it, and that reasoning is forgotten for good
        (`reasoning_parts_drop`), recorded in the reply's metadata: never a failed send for it. A tool
        round's follow-up carries this reply's own reasoning (all that GPT-5.5's `current_turn` sends):
        refused there, it is forgotten from this reply's parts the same way (issue 41, item 12).
        """
        messages = self.history + project_tool_parts(self.parts)
        try:
            return await self._stream_round_stoppable(messages, round_number)
        except ProviderError as exc:
            in_history = any(m["role"] == REASONING_ROLE for m in self.history)
            in_reply = has_carried_reasoning(self.parts)
            if exc.code != REASONING_REJECTED or self.reasoning_dropped is not None or not (in_history or in_reply):
                raise
        self.history = [m for m in self.history if m["role"] != REASONING_ROLE]
        dropped = await persist(reasoning_parts_drop)(
            self.prepared.conversation_id, keep_message_id=self.prepared.assistant_message_id, reason=REASONING_REJECTED
        ) if in_history else 0
        self.parts[:] = reasoning_parts_forget(self.parts, REASONING_REJECTED)
        self.reasoning_dropped = {"reason": REASONING_REJECTED, "messages": dropped + int(in_reply)}
        return await self._stream_round_stoppable(self.history + project_tool_parts(self.parts), round_number)

    async def _stream_round_stoppable(self, messages: list[dict], round_number: int) -> tuple[list, dict]:
        """`_stream_round` in a task of its own, so a stop can end the provider call."""
        return await self._stoppable(self._stream_round(messages, round_number))

    async def _stoppable(self, work: Coroutine[Any, Any, T]) -> T:
        """Await `work` in a task of its own that `stop` cancels (ReplyStopped here, then)."""
        if self.stop_requested:
            work.close()
            raise ReplyStopped
        self._round = asyncio.get_running_loop().create_task(work)
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

    def _stoppable_tool(self, tool: tool_loop.AsyncTool) -> tool_loop.AsyncTool:
        """An event-loop tool (`generate_image`, which waits on the provider) that Stop cuts short: the
        call stays stored without a result, which every projection pairs with the interrupted-call error."""

        async def run(call: provider_gateway.ToolCallRequested, context: tool_loop.ToolContext,
                      emit: Callable[[str, dict], None]) -> tool_loop.ToolResult:
            return await self._stoppable(tool(call, context, emit))

        return run

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

    async def _stream_round(self, messages: list[dict], round_number: int) -> tuple[list, dict]:
        """One provider request: stream its text and reasoning summary, collect its reasoning items,
        citations, tool calls and usage."""
        message_id = self.prepared.assistant_message_id
        calls: list[provider_gateway.ToolCallRequested] = []
        usage = None
        asked_at = time.monotonic()
        text_before = self.length  # citation offsets are into this round's text
        async for event in provider_gateway.stream_reply(self.prepared.config, messages, self.prepared.tools, self.prepared.options):
            self.provider_answered.set()
            if isinstance(event, provider_gateway.ReasoningSummaryDelta):
                self.emit("reasoning", {"text": event.text})
            elif isinstance(event, provider_gateway.ReasoningDone):
                self.parts.append(reasoning_part(event.item_id, event.encrypted_content, list(event.summary), round_number))
                # Thought for: from the request until its last reasoning item, summed over rounds.
                self.thought_seconds = (self.thought_seconds or 0.0) + time.monotonic() - asked_at
                asked_at = time.monotonic()
            elif isinstance(event, provider_gateway.CitationFound):
                self.citations.append(
                    {"url": event.url, "title": event.title, "start": text_before + event.start, "end": text_before + event.end}
                )
            elif isinstance(event, (provider_gateway.TextDelta, provider_gateway.RefusalDelta)):
                if not event.text:
                    continue
                refused = isinstance(event, provider_gateway.RefusalDelta)
                self.refusal = self.refusal or refused
                self.text_parts.append(event.text)
                self.length += len(event.text)
                self.unflushed += len(event.text)
                self.emit("delta", {"text": event.text, "seq": self.length, **({"refusal": True} if refused else {})})
                if self.unflushed >= settings.ELION_FLUSH_CHARACTERS or (
                    time.monotonic() - self.last_flush >= settings.ELION_FLUSH_INTERVAL_SECONDS
                ):
                    await self._flush(message_id)
            elif isinstance(event, provider_gateway.OutputItemDone):
                self.parts.append(output_item_part(event.item, round_number))
            elif isinstance(event, provider_gateway.ToolCallRequested):
                calls.append(event)
            elif isinstance(event, provider_gateway.ImageStarted):
                images.builtin_image_started(event, self.emit)
            elif isinstance(event, provider_gateway.ImagePartial):
                images.builtin_image_partial(event, self.emit)
            elif isinstance(event, provider_gateway.ImageGenerated):
                await images.builtin_image_finished(event, self.prepared.tool_context, self.emit)
            elif isinstance(event, provider_gateway.ProviderWaiting):
                self.emit("status", {"state": "waiting_for_provider", "retry_in": event.seconds})
            elif isinstance(event, provider_gateway.Completed):
                self.incomplete_reason = event.incomplete_reason
                usage = {
                    "input_tokens": event.input_tokens,
                    "cached_input_tokens": event.cached_input_tokens,
                    "output_tokens": event.output_tokens,
                    "reasoning_tokens": event.reasoning_tokens,
                }
        if usage is None:
            raise ProviderError("provider_connection_lost", "The provider's stream ended before the reply was complete.")
        return calls, usage

    async def _heartbeat(self, message_id: UUID) -> None:
        interval = max(settings.ELION_STREAM_LEASE_SECONDS / 3, 0.2)
        while True:
            await asyncio.sleep(interval)
            if not await persist(_renew_lease)(message_id):
                self.stop()
