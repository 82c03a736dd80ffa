"""Read-only data for the server-rendered pages (sidebar, chat transcript).

Selectors only: nothing here writes. The chat page and the message fragment
endpoint build their bubbles through `bubbles_for` so a bubble rendered on
page load and one swapped in after a stream look exactly the same.

The chat page is a window of the live branch (`chat_window`, PAGE_WINDOW
messages; earlier ones load as the owner scrolls up). What the page shows is
read by index, a window's worth at a time, except the header estimate (one
aggregate over the whole branch inside the database): docs/transcript.md.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from uuid import UUID

from django.utils import timezone

from continuity.models import Compaction
from continuity.rules.compaction import COMPACT_MIN_TURNS, summary_system_text
from continuity.rules.eligibility import outside_quarantine
from continuity.rules.labels import assistant_name
from continuity.rules.request_policy import estimate_tokens
from elion.base.errors import InvalidInput
from elion.base.markdown_rendering import render_markdown
from elion.models import AssistantSettings
from operations.usage import latest_reported_usage
from transcript.attachments.generated import generated_image_records
from transcript.attachments.manifests import manifests_for
from transcript.branch_window import (
    BranchWindow,
    branch_window_around,
    branch_window_newest,
    branch_window_start,
    on_live_branch,
)
from transcript.citations import sources_numbered
from transcript.models import Attachment, Conversation, Folder, Message, MessageKind, MessageStatus, Role
from transcript.models.messages import stored_turn_tokens
from transcript.provider.binding import binding_problem_of, configured_provider, recorded_bindings_of_counts
from transcript.provider.binding_groups import binding_combinations
from transcript.provider.gateway import ProviderBinding
from transcript.siblings import Siblings, children_read, siblings_of
from transcript.tool_pairing import reasoning_summary_text
from transcript.tree import is_projectable

SIDEBAR_LIMIT = 300
VISIBLE_ROLES = (Role.USER, Role.ASSISTANT)
# How many live-branch messages the chat page renders at once (and each "earlier" load adds).
PAGE_WINDOW = 50


@dataclass
class SidebarGroup:
    name: str
    folder: Folder | None
    conversations: list[Conversation] = field(default_factory=list)

    @property
    def hidden(self) -> bool:
        return bool(self.folder and self.folder.hidden)


def activity_group_name(day: date, today: date) -> str:
    """The sidebar heading for a conversation last active on `day`: Today, Yesterday, Previous 7 days,
    then the month ("November", with the year when it is not this year's)."""
    if day >= today:
        return "Today"
    if day == today - timedelta(days=1):
        return "Yesterday"
    if day >= today - timedelta(days=7):
        return "Previous 7 days"
    return day.strftime("%B") if day.year == today.year else day.strftime("%B %Y")


def sidebar_groups(limit: int = SIDEBAR_LIMIT) -> list[SidebarGroup]:
    """Conversations not in the trash and not in a hidden folder, most recent first: the unfiled ones
    under date headings (`activity_group_name` of their last activity, in the server's time zone),
    then one group per folder.

    Folders follow in order of their most recent conversation, then empty folders by name. Hidden
    folders have their own page (`visibility_views.hidden_folders_page`).
    """
    rows = (
        outside_quarantine()
        .select_related("folder")
        .order_by("-updated_at")[:limit]
    )
    today = timezone.localdate()
    by_date: dict[str, SidebarGroup] = {}
    folders: dict[int, SidebarGroup] = {}
    for conversation in rows:
        if conversation.folder is None:
            name = activity_group_name(timezone.localdate(conversation.updated_at), today)
            by_date.setdefault(name, SidebarGroup(name=name, folder=None)).conversations.append(conversation)
            continue
        group = folders.get(conversation.folder_id)
        if group is None:
            group = folders[conversation.folder_id] = SidebarGroup(
                name=conversation.folder.name, folder=conversation.folder
            )
        group.conversations.append(conversation)
    for folder in Folder.objects.filter(hidden=False).exclude(pk__in=list(folders)):
        folders[folder.pk] = SidebarGroup(name=folder.name, folder=folder)
    return list(by_date.values()) + list(folders.values())


def assistant_label(conversation: Conversation, settings_row: AssistantSettings) -> str:
    """The name on assistant bubbles (`continuity.rules.labels.assistant_name`)."""
    return assistant_name(conversation.persona, display_name=settings_row.display_name)


@dataclass(frozen=True)
class Bubble:
    message: Message
    author: str
    tokens: int
    # Sanitised HTML for assistant Markdown; empty for user turns (plain text).
    html: str
    editable: bool
    retryable: bool
    # The message's attachment manifest, in order (transcript.attachments.manifests), its generated
    # images apart (a reply's, `chat/_generated_images.html`).
    attachments: tuple = ()
    # Its versions (the parent's children), for "‹ i / n ›"; None: shown alone.
    siblings: Siblings | None = None
    # The head after a rewind: turns below it stay reachable ("Later turns", a switch to it).
    later_turns: bool = False
    continuable: bool = False
    # A check-in's trigger, or the reply to one: what the trigger recorded (`metadata.check_in`: its title,
    # due time), for the mark naming the check-in (issue 44).
    check_in: dict | None = None

    @property
    def versions_shown(self) -> bool:
        return self.siblings is not None and self.siblings.count > 1

    @property
    def previous_version_id(self) -> UUID | None:
        return self.siblings.ids[self.siblings.index - 2] if self.versions_shown and self.siblings.index > 1 else None

    @property
    def next_version_id(self) -> UUID | None:
        shown = self.versions_shown and self.siblings.index < self.siblings.count
        return self.siblings.ids[self.siblings.index] if shown else None
    # A reply's generated images (`chat/_generated_images.html`).
    generated_images: tuple = ()

    @property
    def is_handoff(self) -> bool:
        return self.message.kind == MessageKind.HANDOFF_ARTIFACT

    @property
    def is_streaming(self) -> bool:
        return self.message.status == MessageStatus.STREAMING

    @property
    def reasoning_summary(self) -> str:
        """The provider's summary of its reasoning for this reply (never speech), for the collapsed line."""
        return reasoning_summary_text(self.message.parts)

    @property
    def is_refusal(self) -> bool:
        """The model declined (a `refusal` part): shown as a refusal, never as an empty reply."""
        return bool((self.message.metadata or {}).get("refusal"))

    @property
    def incomplete_reason(self) -> str:
        """Why the provider cut this reply off (status `incomplete`), else ""."""
        return str((self.message.metadata or {}).get("incomplete_reason") or "")

    @property
    def thought_seconds(self) -> float | None:
        seconds = (self.message.metadata or {}).get("thought_seconds")
        return seconds if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) else None

    @property
    def sources(self) -> list[dict]:
        """The reply's citations as numbered sources, one per link (http and https only)."""
        return sources_numbered(self.message.metadata)

    @property
    def image_failures(self) -> list[dict]:
        """The images this reply asked for that were not made: each record's error, in order."""
        return [
            record["error"] for record in generated_image_records(self.message)
            if isinstance(record.get("error"), dict)
        ]

    @functools.cached_property
    def tool_rounds(self) -> list[dict]:
        """Each stored tool call with its result (if any), for the compact view; read once per bubble (the
        template asks up to three times: the cards are rendered only for a reply with tool calls)."""
        parts = self.message.parts or []
        results = {p.get("call_id"): p for p in parts if p.get("type") == "tool_result"}
        return [
            {"name": p.get("name", ""), "arguments": p.get("arguments", ""), "result": results.get(p.get("call_id"))}
            for p in parts
            if p.get("type") == "tool_call"
        ]



# A handoff bubble opens with "### Continued from …": on the page it is the bubble's own heading, one level
# under the chat title (h2), so headings run in order (axe: heading-order).
_HANDOFF_HEADING = re.compile(r"^<h3>(.*?)</h3>", re.DOTALL)


def _bubble_html(message: Message) -> str:
    html = render_markdown(message.content)
    if message.kind == MessageKind.HANDOFF_ARTIFACT:
        html = _HANDOFF_HEADING.sub(r'<h2 class="handoff-heading">\1</h2>', html, count=1)
    return html

def _bubble(
    message: Message, parent: Message | None, owner: str, assistant: str, attachments: Sequence[Attachment] = (),
    siblings: Siblings | None = None, later_turns: bool = False, at_head: bool = False,
) -> Bubble:
    is_assistant = message.role == Role.ASSISTANT
    settled = message.status != MessageStatus.STREAMING
    # Edit-and-resend sends from this turn's parent, which the send pipeline
    # accepts only when it is a finished assistant reply (or no parent at all).
    # A turn with attachments is not editable: its uploads belong to it, and an
    # edited copy would silently leave them behind.
    editable = message.role == Role.USER and message.kind == MessageKind.ORDINARY and not attachments and (
        parent is None or (parent.role == Role.ASSISTANT and parent.status != MessageStatus.STREAMING)
    )
    trigger = message if message.kind == MessageKind.CHECK_IN_TRIGGER else parent
    check_in = (trigger.metadata or {}).get("check_in") if trigger and trigger.kind == MessageKind.CHECK_IN_TRIGGER else None
    return Bubble(
        message=message,
        author=assistant if is_assistant else owner,
        check_in=check_in if isinstance(check_in, dict) else None,
        tokens=stored_turn_tokens(message.role, message.content, message.kind),  # an app event counts none
        html=_bubble_html(message) if is_assistant and settled else "",
        editable=editable,
        retryable=is_assistant and settled and message.kind == MessageKind.ORDINARY and message.parent_id is not None,
        attachments=tuple(a for a in attachments if not a.generated),
        generated_images=tuple(a for a in attachments if a.generated),
        siblings=siblings,
        later_turns=later_turns,
        # A cut-off reply at the end of the thread offers Continue (a send asking for the rest).
        continuable=message.status == MessageStatus.INCOMPLETE and at_head,
    )


def bubbles_for(conversation: Conversation, messages: list[Message], settings_row: AssistantSettings) -> list[Bubble]:
    """Bubbles for `messages` (a slice of one branch, in order)."""
    owner = settings_row.owner_name
    assistant = assistant_label(conversation, settings_row)
    # Every parent's role and status in one statement, whether or not it is in `messages`:
    # a window's first turn has its parent outside it, and the page's statement count
    # stays the same for a short thread and a long one.
    parent_ids = {m.parent_id for m in messages if m.parent_id}
    by_id = {
        m.id: m for m in Message.objects.filter(pk__in=parent_ids).only("id", "role", "status", "kind", "metadata")
    } if parent_ids else {}
    manifests = manifests_for(messages)
    # The versions of every bubble, and whether the head has turns below it (a rewind), in one statement.
    head_shown = any(m.id == conversation.head_id for m in messages)
    children = children_read(
        conversation.id, {m.parent_id for m in messages} | ({conversation.head_id} if head_shown else set())
    )
    return [
        _bubble(
            message, by_id.get(message.parent_id) if message.parent_id else None, owner, assistant,
            manifests.get(message.id, ()), siblings_of(children, message),
            later_turns=message.id == conversation.head_id and bool(children.get(message.id)),
            at_head=message.id == conversation.head_id,
        )
        for message in messages
    ]


def visible_messages(window: BranchWindow) -> list[Message]:
    """The window's messages as the page shows them: user and assistant turns only."""
    return [m for m in window.messages if m.role in VISIBLE_ROLES]


def _message_id(raw: str, name: str) -> UUID:
    try:
        return UUID(raw)
    except ValueError as exc:
        raise InvalidInput(f"{name} must be the id of a message.", code="invalid_cursor") from exc


def chat_window(conversation: Conversation, params: Mapping[str, str]) -> BranchWindow:
    """The live-branch window the chat page renders for its query string.

    `?around=<message id>`: PAGE_WINDOW messages around that message (400 for a
    malformed id, 404 for one not on this conversation's live branch);
    `?start=1`: the first PAGE_WINDOW ("Jump to start"); otherwise the newest.
    """
    around = params.get("around")
    if around:
        return branch_window_around(conversation, cursor_id=_message_id(around, "around"), limit=PAGE_WINDOW)
    if params.get("start"):
        return branch_window_start(conversation, limit=PAGE_WINDOW)
    return branch_window_newest(conversation, limit=PAGE_WINDOW)


def newest_messages(conversation: Conversation, window: BranchWindow) -> list[Message]:
    """The newest PAGE_WINDOW visible live-branch messages: the window itself when it is the newest."""
    newest = window if not window.has_more_after else branch_window_newest(conversation, limit=PAGE_WINDOW)
    return visible_messages(newest)


def thread_token_estimate(messages: list[Message]) -> int:
    """Visible token estimate: ceil(len/4) summed over visible user/assistant
    messages (`stored_turn_tokens`, as `branch_tokens` counts them). The stored static prompt and app
    events (a check-in's trigger) are never part of it."""
    return sum(stored_turn_tokens(m.role, m.content, m.kind) for m in messages)


def branch_estimate(conversation: Conversation) -> int:
    """`thread_token_estimate` of the whole live branch: the head's running measure (`Message.branch_tokens`,
    the same four characters a token over its user and assistant messages, written with each append), one
    row read by primary key however long the thread."""
    if conversation.head_id is None:
        return 0
    found = Message.objects.filter(pk=conversation.head_id, conversation=conversation).values_list(
        "branch_tokens", flat=True
    )
    return found.first() or 0


def latest_diagnostics(messages: list[Message]) -> dict | None:
    """Request-size numbers recorded on the newest assistant reply, if any."""
    for message in reversed(messages):
        if message.role == Role.ASSISTANT and isinstance(message.metadata, dict):
            diagnostics = message.metadata.get("diagnostics")
            if isinstance(diagnostics, dict):
                return diagnostics
    return None


def latest_provider_usage(messages: list[Message]) -> dict | None:
    """What the provider reported for the newest reply on the branch that carries usage:
    `{"message", "figures"}` (the four counts, None where not reported), or None."""
    found = latest_reported_usage(messages)
    return {"message": found[0], "figures": found[1]} if found else None


@dataclass(frozen=True)
class ProviderChange:
    """Why this chat cannot continue here, in plain words: who it was held with, who would continue it."""

    code: str  # the refusal's code: provider_mismatch, provider_binding_mixed, provider_binding_missing
    held_with: str
    continue_with: str


def provider_name(binding: ProviderBinding) -> str:
    """A provider as the owner knows it: "the offline demo provider", or "<model> (<provider id>)"."""
    if binding.provider_type == "offline-demo":
        return "the offline demo provider"
    return f"{binding.model} ({binding.provider_id})"


def provider_change_for(conversation: Conversation) -> ProviderChange | None:
    """The provider-binding refusal a send here would meet (seed 004, fail closed), told in plain words, or None.

    The rows' distinct binding combinations, an index seek each (`binding_combinations`): a statement per
    combination, however long the thread.
    """
    bindings, unbound = recorded_bindings_of_counts(binding_combinations(conversation))
    config = configured_provider()
    problem = binding_problem_of(bindings, unbound, config)
    if problem is None:
        return None
    current = provider_name(config.binding())
    if problem.code == "provider_binding_missing":
        held_with = "a provider that was not recorded"
    elif len(bindings) > 1:
        held_with = "more than one provider"
    else:
        (recorded,) = bindings
        held_with = provider_name(recorded)
        if held_with == current:
            held_with += " at another address"
    return ProviderChange(code=problem.code, held_with=held_with, continue_with=current)


def compaction_in_force(conversation: Conversation) -> Compaction | None:
    """The newest compaction whose boundary is on the live branch (as `applicable_compaction`).

    A statement per compaction tried, newest first: bounded by the conversation's
    compactions, never by its length.
    """
    for compaction in Compaction.objects.filter(conversation=conversation).select_related("through_message").order_by(
        "-pk"
    ):
        if on_live_branch(conversation, compaction.through_message):
            return compaction
    return None


def compaction_context(conversation: Conversation, newest: list[Message], compaction: Compaction | None) -> dict:
    """The chat page's compaction state: the summary in force (`compaction_in_force`), its size,
    and whether Compact is offered (long threads ending in a finished reply).

    `newest`: the newest visible live-branch messages (`newest_messages`); a
    thread counts as long when COMPACT_MIN_TURNS of them are history.
    """
    head = newest[-1] if newest else None
    can_compact = (
        not conversation.trashed
        and head is not None
        and head.role == Role.ASSISTANT
        and head.status != MessageStatus.STREAMING
        and (compaction is None or compaction.through_message_id != head.id)
        and sum(1 for m in newest if is_projectable(m)) >= COMPACT_MIN_TURNS
    )
    return {
        "compaction": compaction,
        "compaction_tokens": estimate_tokens(summary_system_text(compaction.summary)) if compaction else 0,
        "can_compact": can_compact,
    }
