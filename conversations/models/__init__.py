"""The durable transcript: conversations, folders, and the message tree.

Messages form an append-only tree per conversation (seed 004): every message
but the stored static prompt has a `parent` in the same conversation with a
smaller `seq`; the conversation's `head` names the tip of the live branch.
Rewind moves `head`; edit-and-resend appends a sibling; nothing is destroyed.
The stored static prompt (`role=system`) stands outside the tree: it has no
parent, no child, and at most one exists per conversation.

The models live by job (`assistant`, `threads`, `messages`, `attachments`); this package names every
one of them, so `conversations.models.<Model>` and Django's registry see them all.
"""

from conversations.models.assistant import (
    AssistantSettings,
    BackupSchedule,
    Character,
    Persona,
    Personality,
    ReasoningEffort,
    Verbosity,
)
from conversations.models.attachments import (
    Attachment,
    AttachmentBlobIdentity,
    AttachmentKind,
    ManifestEntryQuerySet,
    MessageAttachment,
    manifest_entries_conversation_settle,
)
from conversations.models.messages import Message, MessageKind, MessageSearchEntry, MessageStatus, Role
from conversations.models.speech import AudioCall, AudioUsage, MessageSpeech
from conversations.models.threads import (
    ORIGIN_BADGES,
    Conversation,
    ConversationDeletion,
    ConversationOrigin,
    DeletionState,
    Folder,
    IdempotentAction,
    SelectableConversationManager,
)

__all__ = [
    "ORIGIN_BADGES",
    "AudioCall",
    "AudioUsage",
    "AssistantSettings",
    "BackupSchedule",
    "Attachment",
    "AttachmentBlobIdentity",
    "AttachmentKind",
    "Character",
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
    "Personality",
    "ReasoningEffort",
    "Role",
    "SelectableConversationManager",
    "Verbosity",
    "manifest_entries_conversation_settle",
]
