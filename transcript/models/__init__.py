"""The durable transcript's rows: conversations, folders, and the message tree, with its attachments.

Messages form an append-only tree per conversation (seed 004): every message
but the stored static prompt has a `parent` in the same conversation with a
smaller `seq`; the conversation's `head` names the tip of the live branch.
Rewind moves `head`; edit-and-resend appends a sibling; nothing is destroyed.
The stored static prompt (`role=system`) stands outside the tree: it has no
parent, no child, and at most one exists per conversation.

The rows moved here from the `conversations` app (issue 45) without moving any data: each model keeps
its table (`db_table`), and the move is state-only (`transcript/migrations/0001_rows_from_conversations`).
Other apps' models name these rows by label ("transcript.Conversation"), never by import: this package
sits in the transcript layer, above theirs. The models live by job (`threads`, `messages`, `attachments`,
`speech`); this package names every one of them, so `transcript.models.<Model>` and Django's registry see them.
"""

from transcript.models.attachments import (
    Attachment,
    AttachmentBlobIdentity,
    AttachmentKind,
    ManifestEntryQuerySet,
    MessageAttachment,
    manifest_entries_conversation_settle,
)
from transcript.models.messages import Message, MessageKind, MessageSearchEntry, MessageStatus, Role
from transcript.models.speech import MessageSpeech
from transcript.models.threads import (
    ORIGIN_BADGES,
    Conversation,
    ConversationDeletion,
    ConversationOrigin,
    DeletionState,
    Folder,
    IdempotentAction,
    Persona,
    SelectableConversationManager,
    StalePrompt,
)

__all__ = [
    "ORIGIN_BADGES",
    "Attachment",
    "AttachmentBlobIdentity",
    "AttachmentKind",
    "Conversation",
    "ConversationDeletion",
    "ConversationOrigin",
    "DeletionState",
    "Folder",
    "IdempotentAction",
    "ManifestEntryQuerySet",
    "Message",
    "MessageAttachment",
    "MessageKind",
    "MessageSearchEntry",
    "MessageSpeech",
    "MessageStatus",
    "Persona",
    "Role",
    "SelectableConversationManager",
    "StalePrompt",
    "manifest_entries_conversation_settle",
]
