"""Building the model request for a reply: stored rows in, the assembled request out.

A send reads what it needs under the conversation's lock into a `SendContext`
(the stored prompt, the streaming rows, the settings row), then reads the
newest stretch of the reply's branch, as far as the request can carry it, by
the branch columns every message stores (`transcript.branch_rows`). The
request is built from that, plus what is fresh for each send (the dynamic
context) and the blobs, which are verified again. Nothing is kept between
sends.
The pure assembly is `continuity.rules.request_policy`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from uuid import UUID

from django.conf import settings
from django.db.models import Exists, Q

from continuity.rules.compaction import CompactionOnBranch, compaction_on_branch
from continuity.rules.dynamic_context import dynamic_context_build, recall_may_ask
from continuity.rules.history_window import HistoryWindow, history_window
from continuity.rules.prompt_policy import PromptInputs, handoff_text_of
from continuity.rules.prompt_store import prompt_inputs_for, prompt_is_current
from continuity.rules.request_policy import (
    AssembledRequest,
    assemble_request,
    estimate_tokens,
    tool_definitions_text,
)
from continuity.rules.thread_handoff_store import ThreadHandoffs, thread_handoffs_read
from elion.base.assistant_settings import assistant_settings_get
from elion.base.errors import NotFound
from elion.models import AssistantSettings
from transcript.attachments.projection import PreverifiedAttachments, manifest_parts_verified
from transcript.branch_rows import BranchStretch, branch_stretch_up, stretch_extended
from transcript.models import Conversation, Message, MessageKind, MessageStatus, Role, StalePrompt


@dataclass(frozen=True)
class SendContext:
    """What one send (or retry) has read, once, under its conversation's row lock; each later step makes a
    new one (`dataclasses.replace`), none changes it.

    `prompt` is the stored prompt (None before the first send stores it; the send's composed one once
    composed); `settings_row` the AssistantSettings row; `streaming` the conversation's streaming rows (for
    the write guard); `preverified` what the send verified before the lock (`attachments_preverify`: every
    blob its branch and its new turn may project, so the lock holds no disk I/O; None for a caller holding
    no lock, which verifies the branch's blobs as it reads them). The branch is read later, only as far as
    the request can carry it (`reply_request_build`): nothing here reads the whole thread, so a send costs
    the same statements however long the thread is.
    """

    conversation: Conversation
    prompt: Message | None
    settings_row: AssistantSettings
    streaming: list[Message]
    # The conversation's Branch / Fresh Chat handoff bubbles (where its handoffs came from).
    handoff_bubbles: list[Message]
    head: Message | None  # the conversation's head row (None: no message yet)
    preverified: PreverifiedAttachments | None = None
    # What `send_inputs_read` read for the text this send answers: the conversation's handoffs (None: not
    # needed, the prompt is current and recall will not search) and the inputs of a stored prompt to build
    # now (None: the stored one is current).
    handoffs: ThreadHandoffs | None = None
    prompt_inputs: PromptInputs | None = None
    # The new user turn this send composed and has not written yet, and its attachment parts.
    new_turn: Message | None = None
    new_turn_parts: tuple[dict, ...] = ()

    def find(self, message_id: object) -> Message | None:
        """The conversation's message `message_id` (composed by this send, or stored), else None."""
        try:
            pk = UUID(str(message_id))
        except (ValueError, TypeError):
            return None
        if self.new_turn is not None and pk == self.new_turn.id:
            return self.new_turn
        return Message.objects.filter(pk=pk, conversation=self.conversation).exclude(role=Role.SYSTEM).first()

    def get(self, message_id: object) -> Message:
        found = self.find(message_id)
        if found is None:
            raise NotFound("No message with that id in this conversation.", code="message_not_found")
        return found

    def latest_reply_to(self, user_message: Message) -> Message | None:
        return (
            Message.objects.filter(parent=user_message, role=Role.ASSISTANT).exclude(status=MessageStatus.FAILED)
            .order_by("-seq").first()
        )


def send_context_load(conversation: Conversation, *, preverified: PreverifiedAttachments | None = None) -> SendContext:
    """The stored prompt, the streaming rows, the handoff bubbles and the head in one query (each
    alternative one index's range), and the settings row.

    Precondition for a send: the caller holds the conversation's row lock.
    """
    mine = Q(conversation_id=conversation.id)
    head = Q(pk=conversation.head_id) if conversation.head_id is not None else Q(pk__in=[])
    rows = list(
        Message.objects.filter(
            (mine & Q(role=Role.SYSTEM)) | (mine & Q(status=MessageStatus.STREAMING))
            | (mine & Q(kind=MessageKind.HANDOFF_ARTIFACT)) | (mine & head)
        ).annotate(conversation_marked=Exists(StalePrompt.objects.filter(pk=conversation.id))).order_by()
    )
    prompt = next((m for m in rows if m.role == Role.SYSTEM), None)
    # Whether the stored prompt is marked stale (`StalePrompt`) comes with the rows, read after the row lock
    # (a mark committed while the send waited for it is seen); without a stored prompt it does not matter.
    conversation.prompt_stale = prompt is not None and prompt.conversation_marked
    return SendContext(
        conversation=conversation,
        prompt=prompt,
        settings_row=assistant_settings_get(),
        streaming=[m for m in rows if m.status == MessageStatus.STREAMING and m.role != Role.SYSTEM],
        handoff_bubbles=[m for m in rows if m.kind == MessageKind.HANDOFF_ARTIFACT],
        head=next((m for m in rows if m.id == conversation.head_id and m.role != Role.SYSTEM), None),
        preverified=preverified,
    )


def send_inputs_read(context: SendContext, *, text: str) -> SendContext:
    """The context with the rest of what this send composes from, read before it writes: the conversation's
    handoffs when its stored prompt is built now or recall may search for `text`, and the stored prompt's
    inputs when it is built now (`prompt_is_current`)."""
    rebuild = not prompt_is_current(context.prompt, context.conversation)
    handoffs = context.handoffs
    if handoffs is None and (rebuild or recall_may_ask(text)):
        handoffs = thread_handoffs_read(context.conversation, context.handoff_bubbles)
    prompt_inputs = None
    if rebuild:
        prompt_inputs = prompt_inputs_for(
            context.conversation,
            settings_row=context.settings_row,
            handoffs=handoffs,
            stored_prompt=context.prompt.content if context.prompt is not None else "",
        )
    return replace(context, handoffs=handoffs, prompt_inputs=prompt_inputs)


# How far past the budget (in stored tokens) the first read of a branch reaches, beyond the trim step twice:
# the stored measure leaves tool rounds and attachments out, which only make the real turns longer.
STRETCH_MARGIN_TOKENS = 1_024


@dataclass(frozen=True)
class BranchRead:
    """The stretch of a reply's branch its request may carry, and the history projected from it."""

    stretch: BranchStretch
    history: HistoryWindow
    compacted: CompactionOnBranch
    born: bool  # a finished ordinary reply lies above the stretch


def reply_request_build(context: SendContext, user_message: Message, *, tools: list[dict]) -> AssembledRequest:
    """The model input for the reply to `user_message` (stored, or composed by this send).

    Reads the stretch of its branch that can be in view (`branch_read`), verifies every attachment blob on
    it, and builds the request from it with the stored prompt and the fresh dynamic context.
    """
    conversation = context.conversation
    prompt = context.prompt
    static_prompt = prompt.content if prompt else ""
    tool_text = tool_definitions_text(tools)
    budget = settings.ELION_INPUT_BUDGET_TOKENS
    # The most the history can be given (no dynamic context): a stretch that decides the trim for it decides
    # it for any smaller budget.
    most = max(budget - estimate_tokens(static_prompt) - estimate_tokens(tool_text), 0)
    read = branch_read(context, user_message, history_budget=most)
    dynamic = dynamic_context_build(
        conversation,
        branch=read.stretch.messages,
        static_prompt=static_prompt,
        # What the request can carry of the thread (a superset of what it will carry once trimmed).
        history=read.history.texts,
        settings_row=context.settings_row,
        # Read by `send_inputs_read` when recall may run (a caller that did not: read by recall if it runs).
        handoff_sources=context.handoffs.source_ids() if context.handoffs is not None else None,
        born_above=read.born,
    )
    request = assemble_request(
        static_prompt=static_prompt,
        history=read.history,
        dynamic_context=dynamic.text,
        handoff_text=handoff_text_of(prompt.content, prompt.metadata) if prompt else "",
        tool_definitions_text=tool_text,
        input_budget_tokens=budget,
        trim_step_tokens=trim_step_tokens(),
        birth_period=dynamic.birth_period,
        compacted_summary=read.compacted.summary_text,
        earlier_reasoning=settings.ELION_REASONING_CONTEXT == "all_turns",
    )
    return replace(request, in_view=in_view_of(request, read.history))


def branch_read(context: SendContext, user_message: Message, *, history_budget: int) -> BranchRead:
    """The stretch of `user_message`'s branch a request can carry under `history_budget`: read up from it by
    the stored token measure (one statement, `transcript.branch_rows`), and read further up only when the
    turns read all fit (their real tokens can be fewer than the stored measure says).

    A compaction whose boundary lies on the branch starts the history after it; its summary is carried
    whole, so the history's budget is less by it.
    """
    conversation = context.conversation
    span = history_budget + 2 * trim_step_tokens() + STRETCH_MARGIN_TOKENS
    stored_tip = user_message if context.new_turn is None or user_message.id != context.new_turn.id else None
    above = user_message.parent if stored_tip is None else stored_tip
    rows = (
        branch_stretch_up(conversation.id, above.id, token_floor=user_message.branch_tokens - span)
        if above is not None else []
    )
    stretch = BranchStretch(conversation.id, rows + ([user_message] if stored_tip is None else []))
    compacted = compaction_on_branch(conversation, stretch)
    anchor = _measure_through(stretch, compacted.compaction.through_message_id) if compacted.compaction else 0
    budget = max(history_budget - estimate_tokens(compacted.summary_text), 0)
    while True:
        parts = _stretch_attachment_parts(context, stretch)
        reaches_start = stretch.reaches_root or stretch.messages[0].branch_depth <= compacted.first_index
        history = history_window(
            stretch.messages, attachment_parts=parts, start_depth=compacted.first_index, anchor=anchor,
            reaches_start=reaches_start, budget_tokens=budget,
        )
        if history.conclusive:
            break
        oldest = stretch.messages[0]
        span *= 2
        more = branch_stretch_up(conversation.id, oldest.parent_id, token_floor=user_message.branch_tokens - span,
                                 depth_floor=compacted.first_index)
        stretch = stretch_extended(stretch, more)
    # Whether a finished reply lies above the stretch (the rest is decided over the stretch itself).
    born = bool(stretch.messages) and stretch.messages[0].branch_born
    return BranchRead(stretch, history, compacted, born)


def _measure_through(stretch: BranchStretch, message_id: UUID) -> int:
    """The stored measure through `message_id` (a compaction's boundary on the branch)."""
    found = next((m for m in stretch.messages if m.id == message_id), None)
    if found is not None:
        return found.branch_tokens
    return Message.objects.filter(pk=message_id).values_list("branch_tokens", flat=True).first() or 0


def _stretch_attachment_parts(context: SendContext, stretch: BranchStretch) -> dict[UUID, tuple[dict, ...]]:
    """The attachment parts of the stretch's user turns: every manifest on it, each blob verified during this
    send, before its lock (seed 004: resume revalidates every referenced blob before model projection; a
    missing or tampered one raises AttachmentUnavailable, 409, naming it, which rolls the caller's
    transaction back), and the new turn's, composed before its manifest is written. A reply's generated
    images travel as no input."""
    users = {m.id for m in stretch.messages if m.role == Role.USER}
    turns = {m.id for m in stretch.messages if m.role in (Role.USER, Role.ASSISTANT)}
    parts = manifest_parts_verified(context.conversation.id, turns.__contains__, preverified=context.preverified)
    found = {message_id: value for message_id, value in parts.items() if message_id in users}
    if context.new_turn is not None and context.new_turn.id in users and context.new_turn_parts:
        found[context.new_turn.id] = context.new_turn_parts
    return found


def reply_request_for(context: SendContext, user_message: Message, *, tools: list[dict]) -> AssembledRequest:
    """The model input for the reply to `user_message` (`reply_request_build`)."""
    return reply_request_build(context, user_message, tools=tools)


def trim_step_tokens() -> int:
    """`ELION_TRIM_STEP` (a share of the input budget) in tokens: how far back past the budget a trim cuts."""
    return int(settings.ELION_INPUT_BUDGET_TOKENS * settings.ELION_TRIM_STEP)


def in_view_of(request: AssembledRequest, history: HistoryWindow) -> dict:
    """Where the model's view of the branch begins: the first message a trim kept, and how many branch
    messages lie above it (none trimmed: `first_message_id` null). A compaction's summary is not a trim."""
    first = history.first_kept(request.history_start) if request.history_start else None
    if first is None:
        return {"first_message_id": None, "out_of_view": 0}
    return {"first_message_id": str(first.id), "out_of_view": first.branch_depth}
