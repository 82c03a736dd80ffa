"""Building the model request for a reply: stored rows in, the assembled request out.

A send reads what it needs once, under the conversation's lock, into a
`SendContext` (every message row, the stored prompt, the settings row); the
request is then built from that context alone, plus what is fresh for each
send (the dynamic context) and the blobs, which are verified again.
The pure assembly is `continuity.rules.request_policy`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from uuid import UUID

from django.conf import settings

from continuity.rules.compaction import CompactionOnBranch, compaction_on_branch
from continuity.rules.dynamic_context import carried_text_index_warm, dynamic_context_build, recall_may_run
from continuity.rules.kept_history import BranchHistory, branch_history
from continuity.rules.prompt_policy import PromptInputs, handoff_text_of
from continuity.rules.prompt_store import prompt_inputs_for, prompt_is_current
from continuity.rules.request_policy import AssembledRequest, assemble_request, tool_definitions_text
from continuity.rules.thread_handoff_store import ThreadHandoffs, thread_handoffs_read
from conversations.models import AssistantSettings, Attachment, Conversation, Message, MessageStatus, Role
from elion.base.errors import NotFound
from transcript.assistant_settings import assistant_settings_get
from transcript.attachments.manifests import manifested_message_ids
from transcript.attachments.projection import attachment_parts_verified, manifest_parts_verified
from transcript.tree_cache import BranchRead, conversation_read, kept_branch_read


@dataclass
class SendContext:
    """What one send (or retry) has read, once, under its conversation's row lock.

    `tree` holds every message but the stored prompt, by id; `prompt` is the
    stored prompt (None before the first send stores it); `settings_row` the
    AssistantSettings row; `verified_parts` the attachment parts verified
    before the lock (`attachments_preverify`). Everything that checks, appends or builds for this
    send reads from here, so a send costs a handful of statements however
    long the thread is.
    """

    conversation: Conversation
    tree: dict[UUID, Message]
    prompt: Message | None
    settings_row: AssistantSettings
    # The tree's rows counted by `Message.binding_columns` (for the binding gate), and its streaming rows.
    binding_counts: Mapping[tuple[str, str, str, str, str, str], int]
    streaming: list[Message]
    # Attachment request parts this send verified before it took the lock, by attachment id.
    verified_parts: dict[UUID, dict] = field(default_factory=dict)
    # Read before anything is written, when this send needs them (`send_inputs_read`): the conversation's
    # handoffs (to build its stored prompt, or for recall to leave their sources out), and the inputs of
    # a stored prompt to build now (None: the stored one is current).
    handoffs: ThreadHandoffs | None = None
    prompt_inputs: PromptInputs | None = None
    # A new user turn's attachment parts, by its id, composed before its manifest is written.
    new_turn_parts: dict[UUID, tuple[dict, ...]] = field(default_factory=dict)

    def get(self, message_id: object) -> Message:
        try:
            return self.tree[UUID(str(message_id))]
        except (KeyError, ValueError, TypeError) as exc:
            raise NotFound("No message with that id in this conversation.", code="message_not_found") from exc

    def branch_to(self, message_id: UUID | None) -> BranchRead:
        """Root → `message_id`, oldest first (the live branch when it is the head), as the tree cache reads it."""
        return kept_branch_read(self.conversation.id, self.tree, message_id)

    def latest_reply_to(self, user_message: Message) -> Message | None:
        replies = [
            m for m in self.tree.values()
            if m.parent_id == user_message.id and m.role == Role.ASSISTANT and m.status != MessageStatus.FAILED
        ]
        return max(replies, key=lambda m: m.seq, default=None)


def send_context_load(conversation: Conversation, *, verified_parts: dict[UUID, dict] | None = None) -> SendContext:
    """Every stored row of one conversation in one query, and the settings row.

    Precondition for a send: the caller holds the conversation's row lock.
    """
    read = conversation_read(conversation)
    return SendContext(
        conversation=conversation,
        tree=read.tree,
        prompt=read.prompt,
        settings_row=assistant_settings_get(),
        binding_counts=read.binding_counts,
        streaming=read.streaming,
        verified_parts=verified_parts or {},
    )


def send_inputs_read(context: SendContext, *, text: str) -> None:
    """Read the rest of what this send composes from, before it writes: the conversation's handoffs (one
    query) when its stored prompt is built now or recall may run for `text`, and the stored prompt's inputs
    when it is built now (`prompt_is_current`).

    Whether recall may run is asked of the whole tree, not the reply's branch (which is read once, for the
    request): a thread born on any branch may be past its birth period on this one. So the handoffs are
    read whenever recall may need them, and at most once more than it does (a new first turn of a born
    thread)."""
    rebuild = not prompt_is_current(context.prompt, context.conversation)
    if context.handoffs is None and (rebuild or recall_may_run(context.tree.values(), text)):
        context.handoffs = thread_handoffs_read(context.conversation, context.tree.values())
    if rebuild:
        context.prompt_inputs = prompt_inputs_for(
            context.conversation,
            settings_row=context.settings_row,
            handoffs=context.handoffs,
            stored_prompt=context.prompt.content if context.prompt is not None else "",
        )


def reply_request_build(context: SendContext, *, branch: BranchRead, tools: list[dict]) -> AssembledRequest:
    """The model input for the reply to the last user turn of `branch` (root first).

    Reads the context's rows and stored prompt; verifies every attachment
    blob the branch references (also those a compaction now stands in for).
    The history turns are those kept from this conversation's last send plus
    the ones since (`continuity.rules.kept_history`): nothing here passes over the
    whole branch.
    """
    conversation = context.conversation
    attachment_parts = {
        **branch_attachment_parts(conversation, branch, verified=context.verified_parts),
        **{pk: parts for pk, parts in context.new_turn_parts.items() if pk in branch.positions},
    }
    compacted, history = history_compose(conversation, branch, attachment_parts=attachment_parts)
    prompt = context.prompt
    static_prompt = prompt.content if prompt else ""
    # Layer 2, fresh for this send and never stored: pinned character + keyword recall.
    dynamic = dynamic_context_build(
        conversation,
        branch=branch.messages,
        static_prompt=static_prompt,
        history=history.texts,
        settings_row=context.settings_row,
        history_lineage=history.lineage,
        # Read by `send_inputs_read` when recall may run (a caller that did not: read by recall if it runs).
        handoff_sources=context.handoffs.source_ids() if context.handoffs is not None else None,
    )
    request = assemble_request(
        static_prompt=static_prompt,
        history=history,
        dynamic_context=dynamic.text,
        handoff_text=handoff_text_of(prompt.content, prompt.metadata) if prompt else "",
        tool_definitions_text=tool_definitions_text(tools),
        input_budget_tokens=settings.ELION_INPUT_BUDGET_TOKENS,
        trim_step_tokens=trim_step_tokens(),
        birth_period=dynamic.birth_period,
        compacted_summary=compacted.summary_text,
        earlier_reasoning=settings.ELION_REASONING_CONTEXT == "all_turns",
    )
    return replace(request, in_view=in_view_of(request, history, branch))


def history_compose(
    conversation: Conversation, branch: BranchRead, *, attachment_parts: Mapping[UUID, tuple[dict, ...]]
) -> tuple[CompactionOnBranch, BranchHistory]:
    """The branch's history turns as a request carries them, kept from the last send plus those since
    (`continuity.rules.kept_history`): a compaction whose boundary lies on the branch stands in for the turns
    it covers. A send and its warm-up (`send_context_warm`) compose it here alike."""
    compacted = compaction_on_branch(conversation, branch.positions)
    history = branch_history(
        conversation.id, branch, attachment_parts=attachment_parts, start_index=compacted.first_index
    )
    return compacted, history


def reply_request_for(context: SendContext, user_message: Message, *, tools: list[dict]) -> AssembledRequest:
    """The model input for the reply to `user_message` (stored, or composed by this send): its branch, read
    as the tree cache keeps it, and the request built from it (`reply_request_build`)."""
    return reply_request_build(context, branch=context.branch_to(user_message.id), tools=tools)


def trim_step_tokens() -> int:
    """`ELION_TRIM_STEP` (a share of the input budget) in tokens: how far back past the budget a trim cuts."""
    return int(settings.ELION_INPUT_BUDGET_TOKENS * settings.ELION_TRIM_STEP)


def in_view_of(request: AssembledRequest, history: BranchHistory, branch: BranchRead) -> dict:
    """Where the model's view of the branch begins: the first message a trim kept, and how many branch
    messages lie above it (none trimmed: `first_message_id` null). A compaction's summary is not a trim."""
    if request.history_start == 0 or request.history_start >= len(history):
        return {"first_message_id": None, "out_of_view": 0}
    first = history.message_at(request.history_start)
    return {"first_message_id": str(first.id), "out_of_view": branch.positions[first.id]}


def branch_attachment_parts(
    conversation: Conversation, branch: BranchRead, *, verified: dict[UUID, dict]
) -> dict[UUID, tuple[dict, ...]]:
    """Every manifest on the branch, each blob verified during this send, as request parts.

    Seed 004: resume revalidates every referenced blob before model
    projection; a missing or tampered one raises AttachmentUnavailable (409,
    naming it), which rolls the caller's transaction back. `verified`: the
    parts this send verified before its lock; the rest are verified now.
    A reply's generated images are verified with the rest but travel as no
    input (neither API takes an image in an assistant turn): only the user
    turns' parts are answered.
    """
    parts = manifest_parts_verified(conversation.id, _turn_on(branch), verified=verified)
    return {
        message_id: found for message_id, found in parts.items()
        if branch.messages[branch.positions[message_id]].role == Role.USER
    }


def new_turn_attachment_parts(
    conversation_id: UUID, attachment_ids: tuple[UUID, ...], *, verified: Mapping[UUID, dict]
) -> tuple[dict, ...]:
    """A new user turn's attachment parts, in the order sent, before its manifest is written: those verified
    before the lock (`attachments_preverify`, which also copied them into the conversation's store), and any
    other upload that may still be claimed, verified now in the conversation's store (a blob it holds
    already; refused naming it, 409, if missing or tampered). An upload that cannot be claimed has no part:
    writing the manifest refuses it (`attachments_commit`), which rolls the send back."""
    missing = [pk for pk in attachment_ids if pk not in verified]
    rows = Attachment.objects.in_bulk(missing) if missing else {}
    claimable = [
        rows[pk] for pk in missing
        if pk in rows and rows[pk].attached_at is None and rows[pk].gc_claimed_at is None
        and rows[pk].scope_conversation_id in (None, conversation_id)
    ]
    parts = attachment_parts_verified(conversation_id, {conversation_id: claimable}, verified=verified) if claimable else {}
    now_verified = dict(zip((row.id for row in claimable), parts.get(conversation_id, ()), strict=True))
    return tuple(
        verified[pk] if pk in verified else now_verified[pk]
        for pk in attachment_ids
        if pk in verified or pk in now_verified
    )


def _turn_on(branch: BranchRead) -> Callable[[UUID], bool]:
    """Is a message one of the branch's user or assistant turns?"""

    def on_branch(message_id: UUID) -> bool:
        index = branch.positions.get(message_id)
        return index is not None and branch.messages[index].role in (Role.USER, Role.ASSISTANT)

    return on_branch


def send_context_warm(conversation: Conversation) -> None:
    """Read and build now what a send of `conversation` would before its request, into this process's kept
    copies: the rows (`tree_cache`), the branch to the head, its history turns (`kept_history`) and recall's
    index of the text they carry. The first send of a long thread in a process otherwise pays for all of it
    (about half a second at 10,000 messages); after this it costs what every later send does.

    Reads without the conversation's lock and writes nothing: a row written meanwhile is read again by the
    next send (the tree cache asks for every row changed since the newest it saw, less `RECHECK_WINDOW`).
    No blob is verified here; every send verifies its own (seed 004). The history is projected with the
    attachments the branch's user turns have, so the next send keeps it.
    """
    read = conversation_read(conversation)
    if conversation.head_id is None or conversation.head_id not in read.tree:
        return
    branch = kept_branch_read(conversation.id, read.tree, conversation.head_id)
    on_branch = _turn_on(branch)
    attached = {
        message_id: () for message_id in manifested_message_ids(conversation.id)
        if on_branch(message_id) and branch.messages[branch.positions[message_id]].role == Role.USER
    }
    _compacted, history = history_compose(conversation, branch, attachment_parts=attached)
    static_prompt = read.prompt.content if read.prompt else ""
    carried_text_index_warm(conversation, [static_prompt, *history.texts], lineage=history.lineage)
