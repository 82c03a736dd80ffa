"""A backup, and this instance, described in words for the owner (Settings → Restore), not in table names."""

from __future__ import annotations

from operations.backup import members
from transcript.models import Conversation

# What the owner would call the rows that matter, in the order they are told; every other model is "records".
WORDS = (
    ("transcript.conversation", "conversation", "conversations"),
    ("transcript.message", "message", "messages"),
    ("memories.memory", "memory", "memories"),
    ("transcript.folder", "folder", "folders"),
    ("elion.character", "character", "characters"),
    ("archive.archivedocument", "archive document", "archive documents"),
    ("archive.libraryfile", "Library file", "Library files"),
    ("artifacts.artifact", "artifact", "artifacts"),
)
# Rows that are not the owner's own things: the settings, locks and indexes every instance has.
BOOKKEEPING = frozenset({
    "elion.assistantsettings", "memories.memorysetlock", "transcript.messagesearchentry",
    "continuity.promptreconciliationrun", "transcript.idempotentaction",
})


def _counted(count: int, one: str, many: str) -> str:
    return f"{count:,} {one if count == 1 else many}"


def described(rows: dict[str, int], blobs: int) -> list[str]:
    """["3 conversations", "42 messages", …, "7 attached files", "and 120 other records"]: nothing at zero."""
    parts = [_counted(rows.get(label, 0), one, many) for label, one, many in WORDS if rows.get(label, 0)]
    if blobs:
        parts.append(_counted(blobs, "attached file", "attached files"))
    named = {label for label, _, _ in WORDS} | BOOKKEEPING
    others = sum(count for label, count in rows.items() if label not in named)
    if others:
        parts.append(f"and {_counted(others, 'other record', 'other records')} (continuity, snapshots, search)")
    return parts


def current_rows() -> dict[str, int]:
    """This instance's rows per backed-up model (what a restore would have to replace)."""
    return {members.model_label(model): model._base_manager.count() for model in members.backed_up_models()}


def instance_is_fresh() -> bool:
    """Nothing of the owner's here yet: no conversation, and no other row beyond bookkeeping."""
    if Conversation._base_manager.exists():
        return False
    return not any(count for label, count in current_rows().items() if label not in BOOKKEEPING) and not (
        members.data_dir_has_blobs()
    )


def current_described() -> list[str]:
    return described(current_rows(), sum(1 for _ in members.stored_blobs()))
