"""Read-only data for the visibility pages: hidden folders, the trash, the chat page's state.

Selectors only: nothing here writes. Transitions are `conversations.services.visibility.transitions`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from continuity.rules.eligibility import VisibilityState, visibility_state
from transcript.models import Conversation, Folder

LIST_LIMIT = 500


@dataclass
class HiddenFolder:
    folder: Folder
    conversations: list[Conversation] = field(default_factory=list)


def hidden_folders() -> list[HiddenFolder]:
    """Every hidden folder with its conversations not in the trash, most recent first."""
    groups = {folder.pk: HiddenFolder(folder) for folder in Folder.objects.filter(hidden=True)}
    rows = (
        Conversation.objects.filter(folder_id__in=list(groups), trashed=False)
        .order_by("-updated_at")[:LIST_LIMIT]
    )
    for conversation in rows:
        groups[conversation.folder_id].conversations.append(conversation)
    return list(groups.values())


def trashed_conversations() -> list[Conversation]:
    return list(Conversation.objects.filter(trashed=True).select_related("folder").order_by("-updated_at")[:LIST_LIMIT])


def sidebar_counts() -> dict[str, int]:
    return {
        "trash": Conversation.objects.filter(trashed=True).count(),
        "hidden_folders": Folder.objects.filter(hidden=True).count(),
    }


@dataclass(frozen=True)
class ChatVisibility:
    """What the chat page says about a conversation's visibility, and where it can move."""

    state: VisibilityState
    folder: Folder | None
    folders: list[Folder]

    @property
    def trashed(self) -> bool:
        return self.state == VisibilityState.TRASHED

    @property
    def hidden(self) -> bool:
        return self.state == VisibilityState.HIDDEN

    @property
    def private(self) -> bool:
        return self.state == VisibilityState.PRIVATE

    @property
    def shielded(self) -> bool:
        return self.state == VisibilityState.SHIELDED

    @property
    def in_hidden_folder(self) -> bool:
        return bool(self.folder and self.folder.hidden)


def chat_visibility(conversation: Conversation) -> ChatVisibility:
    folders = list(Folder.objects.all())
    folder = next((f for f in folders if f.pk == conversation.folder_id), None)
    if folder is not None:
        conversation.folder = folder  # no second query for the state
    return ChatVisibility(state=visibility_state(conversation), folder=folder, folders=folders)
