"""The message tree's rows (seed 004) and Past Conversation Search's index of them."""

from __future__ import annotations

import math
import uuid

from django.db import models
from django.db.models import Q

from transcript.models.threads import Conversation


class Role(models.TextChoices):
    SYSTEM = "system", "System"
    USER = "user", "User"
    ASSISTANT = "assistant", "Assistant"
    TOOL = "tool", "Tool"


class MessageKind(models.TextChoices):
    ORDINARY = "ordinary", "Ordinary"
    STATIC_PROMPT = "static_prompt", "Stored static prompt"
    HANDOFF_ARTIFACT = "handoff_artifact", "Branch / Fresh Chat handoff"
    TOOL_CALL = "tool_call", "Tool call"
    TOOL_RESULT = "tool_result", "Tool result"
    # A check-in's trigger (issue 44): an app event on the user side of the tree that records the check-in,
    # its due time and the brief (`metadata.check_in`), the brief in `content`. Not the owner's speech.
    CHECK_IN_TRIGGER = "check_in_trigger", "Check-in trigger"


# App events: rows the app writes into the tree that are nobody's speech. Every consumer of speech leaves
# them out by kind: handoffs and recall take `ordinary` only, the search index's triggers index `ordinary`
# only, the token estimate (`stored_turn_tokens`) counts none of them, exports of speech skip them; the
# request carries each framed for what it is (`continuity.rules.app_events`).
APP_EVENT_KINDS = frozenset({MessageKind.CHECK_IN_TRIGGER})


class MessageStatus(models.TextChoices):
    STREAMING = "streaming", "Streaming"
    COMPLETE = "complete", "Complete"
    INTERRUPTED = "interrupted", "Interrupted"
    FAILED = "failed", "Failed"
    # The provider cut the reply off (output limit, content filter): its text is kept, the reason is in
    # `metadata.incomplete_reason`; a send asking to continue picks it up.
    INCOMPLETE = "incomplete", "Incomplete"


class Message(models.Model):
    # Client-suppliable so a retried send is idempotent.
    id = models.UUIDField(primary_key=True, default=uuid.uuid4)
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="children")
    seq = models.PositiveIntegerField()
    role = models.CharField(max_length=20, choices=Role.choices)
    kind = models.CharField(max_length=30, choices=MessageKind.choices, default=MessageKind.ORDINARY)
    content = models.TextField(blank=True, default="")
    # Structured parts: tool calls on assistant turns, the call id on results.
    parts = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=20, choices=MessageStatus.choices, default=MessageStatus.COMPLETE)
    error = models.CharField(max_length=100, blank=True, default="")
    error_detail = models.TextField(blank=True, default="")
    metadata = models.JSONField(default=dict, blank=True)
    # Provider binding, repeated on every durable message (seed 004).
    provider_id = models.CharField(max_length=100, blank=True, default="")
    provider_type = models.CharField(max_length=50, blank=True, default="")
    model = models.CharField(max_length=100, blank=True, default="")
    route_fingerprint = models.CharField(max_length=64, blank=True, default="")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # Set when the owner asks a streaming reply to stop. The run, in whichever
    # process holds it, sees it at its next flush or lease renewal (and sooner
    # through the channel layer) and keeps the partial text as `interrupted`.
    stop_requested_at = models.DateTimeField(null=True, blank=True)
    # A reply's first speech made (issue 43: Talk, "Read replies aloud automatically" or the speaker
    # button): the reply's voice mark. Set once by a single-column update, never by the run.
    read_aloud_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # The message's place on its branch, written by the append that adds it (`transcript.append`), so
    # a send finds its window with one bounded read instead of walking or keeping the whole thread:
    # how many messages lie above it, the stored token measure of it and everything above it, and whether
    # a finished ordinary reply lies above it (the thread was born before it).
    branch_depth = models.PositiveIntegerField(default=0)
    branch_tokens = models.BigIntegerField(default=0)
    branch_born = models.BooleanField(default=False)

    class Meta:
        db_table = "conversations_message"
        ordering = ["conversation", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["conversation", "seq"], name="message_seq_unique_per_conversation"),
            models.UniqueConstraint(
                fields=["conversation"], condition=Q(role="system"), name="one_system_message_per_conversation"
            ),
        ]
        indexes = [
            models.Index(fields=["status", "lease_expires_at"], name="message_status_lease"),
            # A conversation's rows by when they changed (migration 0013; the tree cache that read it is gone).
            models.Index(fields=["conversation", "updated_at"], name="message_conversation_changed"),
            # A partial index keyed by its own condition's column too: SQLite without planner statistics (the
            # app never runs ANALYZE) ranks indexes by how many key columns a query's terms fix, and chose the
            # (conversation, parent) index over a partial one on the conversation alone, reading every row.
            models.Index(
                fields=["conversation", "status"], condition=Q(status="streaming"),
                name="message_conversation_streaming",
            ),
            # A send's binding gate: two probes, the thread's least and greatest binding
            # (`transcript.provider.binding.provider_binding_gate_probed`).
            models.Index(
                fields=["conversation", "provider_id", "provider_type", "model", "route_fingerprint"],
                condition=~Q(role="system"), name="message_binding_ends",
            ),
            # The binding check's distinct combinations, one index seek each (transcript.provider.binding_groups).
            models.Index(
                fields=["conversation", "role", "kind", "provider_id", "provider_type", "model", "route_fingerprint"],
                name="message_conversation_binding",
            ),
            # A window's versions: its parents' children, and the roots (transcript.siblings.children_read).
            models.Index(fields=["conversation", "parent"], name="message_conversation_parent"),
            # Keyword recall's read of where this thread's handoffs came from.
            models.Index(
                fields=["conversation", "kind"], condition=Q(kind="handoff_artifact"),
                name="message_conversation_handoff",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.role} #{self.seq} in {self.conversation_id}"

    def save(self, *args: object, **kwargs: object) -> None:
        """A row added one at a time gets its branch columns from its parent's (`branch_columns_under`):
        `transcript.append` sets them itself (and inserts in bulk, which never calls this), so this covers
        scripts and fixtures that add a row with `Message.objects.create`."""
        if self._state.adding and not kwargs.get("update_fields"):
            placed = branch_columns_under(
                self.parent if self.parent_id else None, role=self.role, content=self.content, kind=self.kind
            )
            for name, value in placed.items():
                setattr(self, name, value)
        super().save(*args, **kwargs)

    @property
    def binding(self) -> tuple[str, str, str, str]:
        return (self.provider_id, self.provider_type, self.model, self.route_fingerprint)

    @property
    def binding_columns(self) -> tuple[str, str, str, str, str, str]:
        """What decides whether the row may be replayed to a provider (`transcript.provider.binding`):
        its role and kind, and its four binding columns."""
        return (self.role, self.kind, self.provider_id, self.provider_type, self.model, self.route_fingerprint)


class MessageSearchEntry(models.Model):
    """Past Conversation Search's index row for one searchable message.

    Searchable: user and assistant speech (`kind=ordinary`, status complete
    or interrupted); never the stored prompt, tool output or a Branch
    handoff bubble. Database triggers on the message table (migration
    `0004_message_search_index`) create, replace and remove these rows on
    every write path, with `search_text` NULL; `conversations.services.visibility.past_search`
    fills it in (Python tokens, so SQLite and PostgreSQL see the same words)
    before each search. A message's row is only ever replaced, never updated
    in place, except for that fill-in.
    """

    message = models.OneToOneField(Message, on_delete=models.CASCADE, related_name="search_entry")
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="+")
    search_text = models.TextField(null=True, blank=True)

    class Meta:
        db_table = "conversations_messagesearchentry"
        indexes = [
            models.Index(fields=["id"], condition=Q(search_text__isnull=True), name="message_search_pending"),
            # Keyword recall's newest row of each other conversation (continuity.rules.recall_store).
            models.Index(fields=["conversation", "id"], name="message_search_conv_newest"),
        ]

    def __str__(self) -> str:
        return f"search entry for {self.message_id}"


# --- The branch columns (written by every append: `transcript.append`) ---------------------------------

MEASURED_ROLES = (Role.USER, Role.ASSISTANT)


def stored_turn_tokens(role: str, content: str, kind: str = MessageKind.ORDINARY) -> int:
    """A message's own share of `branch_tokens`: its text's estimate (four characters a token) for a user or
    assistant message, as the chat page's header estimate counts it; 0 for anything else, and for an app
    event (`APP_EVENT_KINDS`: not speech)."""
    if role not in MEASURED_ROLES or not content or kind in APP_EVENT_KINDS:
        return 0
    return math.ceil(len(content) / 4)


def ends_birth_period(message: Message) -> bool:
    """Is this the kind of message that ends a branch's birth period: a finished ordinary reply with words
    (`continuity.rules.dynamic_context.in_birth_period`)?"""
    return (
        message.role == Role.ASSISTANT
        and message.kind == MessageKind.ORDINARY
        and message.status == MessageStatus.COMPLETE
        and bool(message.content.strip())
    )


def branch_columns_under(
    parent: Message | None, *, role: str, content: str, kind: str = MessageKind.ORDINARY
) -> dict[str, object]:
    """The branch columns of a new message under `parent` (a root when None)."""
    own = stored_turn_tokens(role, content, kind)
    if parent is None:
        return {"branch_depth": 0, "branch_tokens": own, "branch_born": False}
    return {
        "branch_depth": parent.branch_depth + 1,
        "branch_tokens": parent.branch_tokens + own,
        "branch_born": parent.branch_born or ends_birth_period(parent),
    }
