"""The durable transcript: conversations, folders, and the message tree.

Messages form an append-only tree per conversation (seed 004): every message
but the stored static prompt has a `parent` in the same conversation with a
smaller `seq`; the conversation's `head` names the tip of the live branch.
Rewind moves `head`; edit-and-resend appends a sibling; nothing is destroyed.
The stored static prompt (`role=system`) stands outside the tree: it has no
parent, no child, and at most one exists per conversation.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from django.db import models
from django.db.models import Q


class Persona(models.TextChoices):
    ELION = "elion", "Elion"
    CLIPBOARD = "clipboard", "Clipboard"


class Personality(models.TextChoices):
    NATURAL = "natural", "Natural"
    WARM = "warm", "Warm"
    PLAYFUL = "playful", "Playful"
    CONCISE = "concise", "Concise"
    REFLECTIVE = "reflective", "Reflective"


class ReasoningEffort(models.TextChoices):
    MINIMAL = "minimal", "Minimal"
    LOW = "low", "Low"
    MEDIUM = "medium", "Medium"
    HIGH = "high", "High"


class Verbosity(models.TextChoices):
    LOW = "low", "Low"
    MEDIUM = "medium", "Medium"
    HIGH = "high", "High"


class AssistantSettings(models.Model):
    """Singleton (pk=1) holding the owner's settings for the assistant."""

    owner_name = models.CharField(max_length=100, default="AUMA")
    display_name = models.CharField(max_length=100, default="Elion Voicefire")
    personality = models.CharField(max_length=20, choices=Personality.choices, default=Personality.NATURAL)
    custom_instructions = models.TextField(blank=True, default="")
    archive_access = models.BooleanField(default=False)
    web_search = models.BooleanField(default=False)
    # Responses API `store`: off, so the provider keeps no response of these conversations.
    provider_store_responses = models.BooleanField(default=False)
    # Responses API `reasoning.effort`, `text.verbosity`, and whether to ask for (and show) reasoning summaries.
    reasoning_effort = models.CharField(max_length=10, choices=ReasoningEffort.choices, default=ReasoningEffort.MEDIUM)
    verbosity = models.CharField(max_length=10, choices=Verbosity.choices, default=Verbosity.MEDIUM)
    reasoning_summary_shown = models.BooleanField(default=True)
    # Image generation (off by default): the built-in `image_generation` tool on `responses`,
    # the app's `generate_image` tool (the Images API) on `chat.completions`.
    image_generation = models.BooleanField(default=False)
    # "Elion may suggest memories": the `propose_memory` tool is offered (issue 35); it saves nothing by itself.
    memory_suggestions = models.BooleanField(default=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "assistant settings"
        verbose_name_plural = "assistant settings"

    def __str__(self) -> str:
        return f"Settings for {self.display_name}"


class Folder(models.Model):
    name = models.CharField(max_length=200)
    hidden = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
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
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = SelectableConversationManager()
    all_objects = models.Manager()

    class Meta:
        ordering = ["-updated_at"]
        base_manager_name = "all_objects"
        indexes = [models.Index(fields=["persona", "trashed", "-updated_at"], name="conv_persona_recent")]

    def __str__(self) -> str:
        return self.title or f"Conversation {self.id}"

    @property
    def display_title(self) -> str:
        return self.title or "New chat"

    @property
    def origin_badge(self) -> str:
        """"Branch", "Fork", "Imported" — or "" for a conversation begun as a New Chat."""
        return ORIGIN_BADGES.get(self.origin, "")


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
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["conversation", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["conversation", "seq"], name="message_seq_unique_per_conversation"),
            models.UniqueConstraint(
                fields=["conversation"], condition=Q(role="system"), name="one_system_message_per_conversation"
            ),
        ]
        indexes = [
            models.Index(fields=["status", "lease_expires_at"], name="message_status_lease"),
            # The tree cache's read of what changed (transcript.tree_cache).
            models.Index(fields=["conversation", "updated_at"], name="message_conversation_changed"),
            models.Index(
                fields=["conversation"], condition=Q(status="streaming"), name="message_conversation_streaming"
            ),
            # Keyword recall's read of where this thread's handoffs came from.
            models.Index(
                fields=["conversation"], condition=Q(kind="handoff_artifact"), name="message_conversation_handoff"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.role} #{self.seq} in {self.conversation_id}"

    @property
    def binding(self) -> tuple[str, str, str, str]:
        return (self.provider_id, self.provider_type, self.model, self.route_fingerprint)

    @property
    def binding_columns(self) -> tuple[str, str, str, str, str, str]:
        """What decides whether the row may be replayed to a provider (`transcript.provider.binding`):
        its role and kind, and its four binding columns."""
        return (self.role, self.kind, self.provider_id, self.provider_type, self.model, self.route_fingerprint)


class IdempotentAction(models.Model):
    """Remembers the result of a retry-safe action (branch, fork) by its key."""

    action = models.CharField(max_length=30)
    key = models.CharField(max_length=200)
    source = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="+")
    result = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["action", "source", "key"], name="idempotent_action_key_unique"),
        ]


class Character(models.Model):
    """A Character Studio character: listed in every stored prompt's saved-characters
    section and pinnable for one message as dynamic context."""

    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    image_guidance = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name


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
        indexes = [
            models.Index(fields=["id"], condition=Q(search_text__isnull=True), name="message_search_pending"),
            # Keyword recall's newest row of each other conversation (continuity.rules.recall_store).
            models.Index(fields=["conversation", "id"], name="message_search_conv_newest"),
        ]

    def __str__(self) -> str:
        return f"search entry for {self.message_id}"


class AttachmentKind(models.TextChoices):
    IMAGE = "image", "Image"
    FILE = "file", "File"


class Attachment(models.Model):
    """One uploaded (or generated) image or file: its attachment identity and its content identity.

    The bytes live as content-addressed blobs (`transcript.attachments.store`):
    first in the upload store, then, once a send commits it, in the store of
    every conversation whose messages list it. Rows never change after upload
    except the two claim timestamps, each set once by a conditional UPDATE
    (and `generated_character`, cleared when its character is deleted).

    A generated image (`generated`) is written by a reply, straight into its
    conversation's store, and listed on the assistant message's manifest
    (`transcript.attachments.generated`); it is born attached.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    sha256 = models.CharField(max_length=64, db_index=True)
    size = models.PositiveBigIntegerField()
    # Display name only: sanitised at upload and never used in a filesystem path.
    name = models.CharField(max_length=255)
    mime = models.CharField(max_length=100)
    kind = models.CharField(max_length=10, choices=AttachmentKind.choices)
    # The text a file contributes to model requests (extracted once at upload);
    # empty for images, which travel as image inputs.
    text = models.TextField(blank=True, default="")
    # Set at upload when the client names a conversation: only that one may attach it.
    scope_conversation_id = models.UUIDField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Set once, by the send that commits the attachment to a message.
    attached_at = models.DateTimeField(null=True, blank=True)
    # Set once, by the garbage collector that claimed an unattached upload.
    gc_claimed_at = models.DateTimeField(null=True, blank=True)
    # An image a reply generated (image generation), never an upload; and the saved
    # character whose image guidance went into its prompt, if any (its gallery).
    generated = models.BooleanField(default=False)
    generated_character = models.ForeignKey(
        Character, null=True, blank=True, on_delete=models.SET_NULL, related_name="generated_images"
    )

    class Meta:
        indexes = [models.Index(fields=["attached_at", "created_at"], name="attachment_gc_scan")]

    def __str__(self) -> str:
        return f"{self.name} ({self.sha256[:12]})"


def manifest_entries_conversation_settle(entries: list[MessageAttachment]) -> None:
    """Give each manifest entry its message's conversation, or refuse (ValueError) one naming another.

    An entry's `conversation` repeats its message's, so a conversation's
    manifests are read by an index of their own, without the message table.
    A database CHECK cannot compare two tables, so every write through the app
    passes here instead: `MessageAttachment.save`, the manager's
    `bulk_create`, and a restore (`operations.backup.restoring`). The
    conversation is taken from a message instance the entry already holds, and
    otherwise read, for all the entries at once, from the message rows.
    """
    unknown = {
        entry.message_id for entry in entries
        if entry.message_id is not None and "message" not in entry._state.fields_cache
    }
    owners: dict[uuid.UUID, uuid.UUID] = {}
    ids = sorted(unknown)
    for start in range(0, len(ids), _SETTLE_BATCH):
        owners.update(
            Message._base_manager.filter(pk__in=ids[start : start + _SETTLE_BATCH]).values_list("pk", "conversation_id")
        )
    for entry in entries:
        owner = entry.message.conversation_id if entry.message_id not in unknown else owners.get(entry.message_id)
        if owner is None:
            continue  # no such message: the foreign key refuses the row
        if entry.conversation_id is None:
            entry.conversation_id = owner
        elif entry.conversation_id != owner:
            raise ValueError(
                f"A manifest entry of message {entry.message_id} must name that message's conversation "
                f"({owner}), not {entry.conversation_id}."
            )


_SETTLE_BATCH = 500


class ManifestEntryQuerySet(models.QuerySet):
    """Entries are written whole and never changed (`MessageAttachment`)."""

    def bulk_create(self, objs: Iterable[MessageAttachment], *args: object, **kwargs: object) -> list[MessageAttachment]:
        entries = list(objs)
        manifest_entries_conversation_settle(entries)
        return super().bulk_create(entries, *args, **kwargs)

    def update(self, **kwargs: object) -> int:
        raise ValueError("A message's attachment manifest is immutable.")

    def bulk_update(self, *args: object, **kwargs: object) -> int:
        raise ValueError("A message's attachment manifest is immutable.")


class MessageAttachment(models.Model):
    """One entry of a message's immutable, ordered attachment manifest.

    Written in the transaction that creates its message (a send or a fork)
    and never updated; a fork lists the same attachment under its own
    message, so one attachment identity can appear in several conversations.
    A reply's generated images are the one addition: each is appended, at the
    next position, while the reply streams (`transcript.attachments.generated`).

    `conversation` is always the message's own (issue 18): a send reads its
    conversation's manifests by `(conversation, message, position)`, a cost
    that does not grow with the thread's other messages. Every writer goes
    through `manifest_entries_conversation_settle` (there is no cross-table
    CHECK in SQL), which fills it from the message or refuses a mismatch.
    """

    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="manifest_entries", db_index=False
    )
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="manifest")
    position = models.PositiveSmallIntegerField()
    attachment = models.ForeignKey(Attachment, on_delete=models.PROTECT, related_name="manifest_entries")

    objects = ManifestEntryQuerySet.as_manager()

    class Meta:
        # By the columns themselves: ordering by `message` would join the message and conversation
        # tables (their own orderings) into every read of a conversation's entries.
        ordering = ["message_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["message", "position"], name="manifest_position_unique"),
            models.UniqueConstraint(fields=["message", "attachment"], name="manifest_attachment_unique"),
        ]
        # A conversation's manifests in their order (its leading column serves the foreign key too).
        indexes = [models.Index(fields=["conversation", "message", "position"], name="manifest_conversation_order")]

    def __str__(self) -> str:
        return f"attachment {self.position} of {self.message_id}"

    def save(self, *args: object, **kwargs: object) -> None:
        # The manifest is immutable once written: an existing entry is never saved again.
        if not self._state.adding:
            raise ValueError("A message's attachment manifest is immutable.")
        manifest_entries_conversation_settle([self])
        super().save(*args, **kwargs)


class AttachmentBlobIdentity(models.Model):
    """The file identity of one conversation-store blob when its bytes last hashed correctly.

    Seed 004 wants every referenced blob verified before it is projected. A
    blob is read-only and never rewritten by the app (a store only adds or
    removes whole files), so after one full check its identity, the
    `(st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns)` of the file whose
    bytes were hashed, stands in for the hash: a send stat()s each blob and
    re-hashes only when the identity differs from this record (or there is
    none). What that catches and what it cannot is README "Attachments at
    scale"; a daily full re-hash (`blobs_rehash_all`) bounds the rest.

    Why a row and not a process-local cache: a send runs in any Daphne worker
    and the re-hash job in a django-q cluster; one record is shared by all of
    them and survives restarts, so a 200-image thread is hashed once, not once
    per process and again after every deploy, and the job can revoke trust
    (delete the row) for every process at once. All of a conversation's rows
    are read in one query per send. One row per (conversation, sha256): each
    conversation owns its copy of the bytes (a fork copies), so each file has
    its own identity. The identity is one text value, `dev:ino:size:mtime_ns:ctime_ns`,
    because device and inode numbers are unsigned 64-bit and do not fit a
    signed bigint column on every filesystem; it is only ever compared whole.
    """

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="blob_identities")
    sha256 = models.CharField(max_length=64)
    file_identity = models.CharField(max_length=120)
    verified_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["conversation", "sha256"], name="blob_identity_unique"),
        ]

    def __str__(self) -> str:
        return f"blob {self.sha256[:12]} of {self.conversation_id}"


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
        indexes = [models.Index(fields=["state", "claimed_until"], name="deletion_state_claim")]

    def __str__(self) -> str:
        return f"Deletion #{self.pk} of {self.conversation_id} ({self.state})"
