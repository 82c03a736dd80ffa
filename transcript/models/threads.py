"""Conversations and folders, the retry-safe actions on them, and a conversation's permanent deletion."""

from __future__ import annotations

import uuid

from django.db import models


class Persona(models.TextChoices):
    ELION = "elion", "Elion"
    CLIPBOARD = "clipboard", "Clipboard"


class Folder(models.Model):
    name = models.CharField(max_length=200)
    hidden = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "conversations_folder"
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name


class ConversationOrigin(models.TextChoices):
    NEW_CHAT = "new_chat", "New chat"
    BRANCH = "branch", "Branch / Fresh Chat"
    FORK = "fork", "Fork"
    LEGACY = "legacy", "Legacy"
    # "Continue in a new chat" from an archive document (issue 34; earlier ones are `branch`).
    IMPORTED = "imported", "Imported"


# The badge beside a conversation's title that says where it came from (never a suffix in the title).
ORIGIN_BADGES = {
    ConversationOrigin.BRANCH: "Branch",
    ConversationOrigin.FORK: "Fork",
    ConversationOrigin.IMPORTED: "Imported",
}


class SelectableConversationManager(models.Manager):
    """Conversations that may be selected anywhere: never one being deleted forever.

    The default manager, so lists, search, recall, handoff capture, the API
    and the pages all stop seeing a conversation the moment its permanent
    deletion intent commits (`transcript.deletion`). Related-object access
    and the deletion steps use `Conversation.all_objects`.
    """

    def get_queryset(self) -> models.QuerySet:
        return super().get_queryset().filter(deletion_generation__isnull=True)


class Conversation(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    title = models.CharField(max_length=300, blank=True, default="")
    persona = models.CharField(max_length=20, choices=Persona.choices, default=Persona.ELION)
    folder = models.ForeignKey(Folder, null=True, blank=True, on_delete=models.SET_NULL, related_name="conversations")
    trashed = models.BooleanField(default=False)
    shielded = models.BooleanField(default=False)
    # A private chat (issue 22): born outside automatic continuity; never feeds it
    # (`continuity.rules.eligibility`) and is deleted forever after a period of inactivity.
    private = models.BooleanField(default=False)
    origin = models.CharField(max_length=20, choices=ConversationOrigin.choices, default=ConversationOrigin.NEW_CHAT)
    # The app made the title (from the first message, or a Branch / Fork's source title); False once
    # the owner types one. Only app-made titles are ever rewritten (migration 0018).
    title_auto = models.BooleanField(default=False)
    head = models.ForeignKey(
        "Message", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_constraint=False
    )
    # Highest seq handed out; bumped under the conversation's row lock.
    last_seq = models.PositiveIntegerField(default=0)
    # Set (with a fresh value) when the owner deletes it forever: the generation
    # a `ConversationDeletion` removes. Never cleared; the row goes away.
    deletion_generation = models.UUIDField(null=True, blank=True, editable=False)
    # Where the model's view began in the last send's request: {"first_message_id": id | None,
    # "out_of_view": n} (`continuity.rules.request_store.in_view_of`), written by the send's own save.
    in_view = models.JSONField(null=True, blank=True, default=None)
    # Elion wrote here by itself (a check-in's reply, issue 44) and the owner has not opened it since:
    # set by `check_ins.services.runs.announce_check_in_reply`, cleared when the owner opens the
    # conversation's page or marks it read (`conversation_mark_read`).
    unread = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = SelectableConversationManager()
    all_objects = models.Manager()

    class Meta:
        db_table = "conversations_conversation"
        ordering = ["-updated_at"]
        base_manager_name = "all_objects"
        indexes = [
            models.Index(fields=["persona", "trashed", "-updated_at"], name="conv_persona_recent"),
            # Most recent first, stopping at a page: the sidebar and New Chat's prior-thread selection
            # (`continuity.rules.handoff_store.recent_speakers`), whatever the number of conversations.
            models.Index(fields=["-updated_at", "-id"], name="conversation_recent"),
            models.Index(fields=["persona", "-updated_at", "-id"], name="conversation_persona_recent"),
            # The trash's count in the sidebar.
            models.Index(fields=["id"], condition=models.Q(trashed=True), name="conversation_trashed"),
        ]

    def __str__(self) -> str:
        return self.title or f"Conversation {self.id}"

    @property
    def display_title(self) -> str:
        return self.title or "New chat"

    @property
    def origin_badge(self) -> str:
        """"Branch", "Fork", "Imported" — or "" for a conversation begun as a New Chat."""
        return ORIGIN_BADGES.get(self.origin, "")


class StalePrompt(models.Model):
    """A conversation whose stored prompt may be stale: a source it reads changed (a settings save, a memory
    edit or delete, a visibility transition) after it was built. Written in the changing operation's
    transaction, deleted when the prompt is rebuilt; a send never uses the prompt of a conversation marked so
    (`continuity.rules.prompt_refresh`, docs/continuity.md "Prompt refreshes"). The refresh batches walk
    these rows in conversation id order (the primary key).

    A narrow row of its own, not a column of the conversation: marking every conversation's prompt inserts
    these rows, where setting a column rewrote each wide conversation row and every one of its nine indexes
    (on PostgreSQL ~250 ms for 10,000 conversations against ~35 ms), while the operation's row locks on
    those conversations kept every send into one of them waiting (docs/continuity.md)."""

    conversation = models.OneToOneField(
        Conversation, primary_key=True, on_delete=models.CASCADE, related_name="stale_prompt"
    )

    class Meta:
        db_table = "transcript_stale_prompt"


class IdempotentAction(models.Model):
    """Remembers the result of a retry-safe action (branch, fork) by its key."""

    action = models.CharField(max_length=30)
    key = models.CharField(max_length=200)
    source = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="+")
    result = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "conversations_idempotentaction"
        constraints = [
            models.UniqueConstraint(fields=["action", "source", "key"], name="idempotent_action_key_unique"),
        ]


class DeletionState(models.TextChoices):
    PENDING = "pending", "Pending"
    COMPLETE = "complete", "Complete"


class ConversationDeletion(models.Model):
    """A permanent deletion: its intent, its progress, then its receipt.

    Recorded before anything is removed and never deleted itself. The id
    (autoincrement, never reused) and `generation` (the value stamped on the
    conversation at intent time) identify what is removed: every step only
    touches a conversation still carrying that generation, so a stale job or
    an old receipt can never reach a newer record. `counts` holds row counts
    per step, never text. Work is claimed with a conditional UPDATE of
    `claimed_until` (a lease), so two clusters never run the same steps.
    """

    conversation_id = models.UUIDField(db_index=True)
    generation = models.UUIDField(unique=True)
    state = models.CharField(max_length=20, choices=DeletionState.choices, default=DeletionState.PENDING)
    # Name of the next step to run; "" once every step ran.
    next_step = models.CharField(max_length=50, blank=True, default="")
    counts = models.JSONField(default=dict, blank=True)
    claim = models.UUIDField(null=True, blank=True)
    claimed_until = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    requested_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "conversations_conversationdeletion"
        indexes = [models.Index(fields=["state", "claimed_until"], name="deletion_state_claim")]

    def __str__(self) -> str:
        return f"Deletion #{self.pk} of {self.conversation_id} ({self.state})"
