"""Past Conversation Search: the owner's deliberate full-text search over conversations.

What is searched: user and assistant speech on each conversation's live
branch. Never the stored static prompt (a system message), tool calls or
results (stored as parts, never in `content`), failed or still-streaming
replies, or Branch / Fresh Chat handoff bubbles: a bubble quotes another
conversation's final exchange, so it is found (once) in its source, under
that source's own visibility, and a bubble can never carry a hidden
conversation's words into results.

Which conversations: never hidden or trashed; Continuity-Shielded ones only
when `include_shielded` is asked for that one search, private chats only when
`include_private` is. The options are read here and nowhere else: they
release no shield, keep no private chat and change no eligibility
(`continuity.rules.eligibility.deliberate_search_sources`).

Results are grouped by conversation: the conversation with the best match
first, up to `PER_CONVERSATION` excerpts each, best first. The same query
gives the same results on SQLite and PostgreSQL (`elion.base.fulltext`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from continuity.rules.eligibility import deliberate_search_sources
from elion.base.fulltext import excerpt, query_terms, score
from transcript.models import Conversation, Message, MessageKind, MessageSearchEntry, Role
from transcript.search_index import message_matching_ids, message_search_index_sync
from transcript.tree import BrokenTree, live_ids_among

RESULT_LIMIT = 50
PER_CONVERSATION = 5
CANDIDATE_LIMIT = 1_000


@dataclass(frozen=True)
class SearchHit:
    conversation_id: UUID
    conversation_title: str
    message_id: UUID
    role: str
    excerpt: str
    shielded: bool
    private: bool
    created_at: datetime

    def as_dict(self) -> dict:
        return {
            "conversation_id": str(self.conversation_id),
            "conversation_title": self.conversation_title,
            "message_id": str(self.message_id),
            "role": self.role,
            "excerpt": self.excerpt,
            "shielded": self.shielded,
            "private": self.private,
            "created_at": self.created_at.isoformat(),
        }


def _live_among(entries: list[tuple]) -> set[UUID]:
    """The entries' messages on their conversation's live branch (`live_ids_among`, the one walk).

    A conversation whose tree is broken (`BrokenTree`) is left out of the search, so one broken
    thread cannot turn the owner's search over every other thread into an error; walking again
    without it costs one statement per broken conversation (`manage.py check_transcripts` reports it).
    """
    while True:
        try:
            return live_ids_among([row[1] for row in entries], [row[4] for row in entries])
        except BrokenTree as broken:
            kept = [row for row in entries if row[2] != broken.step.conversation_id]
            if len(kept) == len(entries):
                raise  # the break names no conversation of the search: nothing to leave out
            entries = kept


def past_conversation_search(
    query: str, *, include_shielded: bool = False, include_private: bool = False, limit: int = RESULT_LIMIT,
    per_conversation: int = PER_CONVERSATION,
) -> list[SearchHit]:
    """Messages holding every word of `query`, grouped by conversation, best first."""
    terms = query_terms(query)
    if not terms or limit <= 0:
        return []
    message_search_index_sync()
    sources = deliberate_search_sources(include_shielded=include_shielded, include_private=include_private)
    ids = message_matching_ids(terms, sources=sources, limit=CANDIDATE_LIMIT)
    entries = list(
        MessageSearchEntry.objects.filter(pk__in=ids).values_list(
            "pk", "message_id", "conversation_id", "search_text", "conversation__head_id"
        )
    )
    live = _live_among(entries)
    ranked = sorted(
        (
            (score(text or "", terms), pk, message_id, conversation_id)
            for pk, message_id, conversation_id, text, _head in entries
            if message_id in live
        ),
        key=lambda item: (-item[0], -item[1]),
    )
    # Grouped: conversations in the order of their best match, each with its best few.
    groups: dict[UUID, list[UUID]] = {}
    for _score, _pk, message_id, conversation_id in ranked:
        group = groups.setdefault(conversation_id, [])
        if len(group) < per_conversation:
            group.append(message_id)
    chosen = [(conversation_id, message_id) for conversation_id, group in groups.items() for message_id in group]
    chosen = chosen[:limit]
    messages = Message.objects.in_bulk([message_id for _, message_id in chosen])
    conversations = Conversation.objects.in_bulk({conversation_id for conversation_id, _ in chosen})
    return [
        SearchHit(
            conversation_id=conversation_id,
            conversation_title=conversations[conversation_id].display_title,
            message_id=message_id,
            role=messages[message_id].role,
            excerpt=excerpt(messages[message_id].content, terms),
            shielded=conversations[conversation_id].shielded,
            private=conversations[conversation_id].private,
            created_at=messages[message_id].created_at,
        )
        for conversation_id, message_id in chosen
        if message_id in messages and conversation_id in conversations
    ]


def quoted_excerpt(*, message_id: UUID | str, query: str) -> str:
    """Text to place in the message box when the owner deliberately uses a result.

    Any conversation's message may be quoted this way: using it is the
    owner's explicit act, and it reaches the model only if they send it.
    Returns "" when there is no such user/assistant message.
    """
    try:
        message = (
            Message.objects.select_related("conversation")
            .filter(role__in=(Role.USER, Role.ASSISTANT), kind=MessageKind.ORDINARY)
            .get(pk=UUID(str(message_id)))
        )
    except (ValueError, TypeError, Message.DoesNotExist):
        return ""
    text = excerpt(message.content, query_terms(query), keep_lines=True)
    # A Markdown quote block: every line quoted, a blank line as a bare ">" so paragraphs stay one quote.
    quoted = "\n".join(f"> {line}" if line else ">" for line in text.splitlines() or [""])
    return f"{quoted}\n— from “{message.conversation.display_title}”\n\n"
