"""Layer 2: the dynamic context message, assembled fresh for each send.

It is sent as a second system message next to the conversation turns
(`continuity.rules.request_policy.assemble_request` places it) and is never
stored; when it has nothing to say it is omitted entirely. It holds, in order:

1. The pinned character, when the owner pinned a Character Studio character
   for this message (`metadata["pinned_character_id"]` on the user turn).
2. Automatic keyword recall (`continuity.rules.recall_policy`, searched by
   `continuity.rules.recall_store`), never during the thread's birth period.

Reads only; the request stays a function of stored rows plus this text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from uuid import UUID

from continuity.rules import recall_overlap as overlap
from continuity.rules import recall_policy as kr
from continuity.rules.prompt_policy import quote_reserved_headings
from continuity.rules.recall_store import (
    best_recall_candidates,
    live_message_ids,
    recall_candidates,
    title_terms,
)
from continuity.rules.thread_handoff_store import thread_handoff_source_ids
from elion.models import AssistantSettings, Character
from transcript.models import Conversation, Message, Role
from transcript.models.messages import ends_birth_period

PINNED_HEADING = "=== PINNED CHARACTER ==="
PINNED_CHARACTER_KEY = "pinned_character_id"


@dataclass(frozen=True)
class DynamicContext:
    text: str
    birth_period: bool
    recall_reason: str  # a fixed name from keyword_recall.recall_decision
    excerpts: int
    pinned_character: bool


def in_birth_period(branch: Iterable[Message]) -> bool:
    """Before the thread's first ordinary assistant response on its live branch.

    A Branch / Fresh Chat handoff bubble is not a response (its kind is
    `handoff_artifact`); neither is a failed, still-streaming or interrupted
    reply: the thread is born with its first complete ordinary reply.
    """
    return not any(ends_birth_period(m) for m in branch)


def recall_may_run(messages: Iterable[Message], text: str) -> bool:
    """Whether automatic recall may search for the reply to `text` after a branch of `messages` (the branch
    or any set holding it): past the birth period, and the message has keywords (`recall_section` asks
    nothing of the database otherwise)."""
    return not in_birth_period(messages) and bool(kr.extract_keywords(text))


def recall_may_ask(text: str) -> bool:
    """Could recall search for the reply to `text` at all: it has keywords (`recall_section` asks nothing of
    the database otherwise). Whether the branch is past its birth period is the send's to decide from its
    rows (`transcript.append`)."""
    return bool(kr.extract_keywords(text))


def pinned_character_section(*, name: str, description: str, image_guidance: str, owner_name: str) -> str:
    """The pinned character, for this one message. User-authored fields keep
    their words; the reserved recall heading becomes its quoted label."""
    lines = [
        PINNED_HEADING,
        f"{quote_reserved_headings(owner_name)} pinned this Character Studio character for the current message. "
        "Keep the character in mind for this reply; it does not change who you are.",
        f"Name: {quote_reserved_headings(' '.join(name.split()))}",
    ]
    if description.strip():
        lines.append(f"Description: {quote_reserved_headings(description.strip())}")
    if image_guidance.strip():
        lines.append(f"Image guidance: {quote_reserved_headings(image_guidance.strip())}")
    return "\n".join(lines)


def _pinned_section(user_message: Message | None, owner_name: str) -> str:
    character_id = (user_message.metadata or {}).get(PINNED_CHARACTER_KEY) if user_message else None
    if not isinstance(character_id, int):
        return ""
    # A character deleted since the message was sent is simply not pinned any more.
    character = Character.objects.filter(pk=character_id).first()
    if character is None:
        return ""
    return pinned_character_section(
        name=character.name,
        description=character.description,
        image_guidance=character.image_guidance,
        owner_name=owner_name,
    )


def recall_section(
    conversation: Conversation,
    *,
    text: str,
    birth_period: bool,
    carried: Sequence[str],
    owner_name: str,
    display_name: str,
    handoff_sources: set[UUID] | None = None,
) -> tuple[str, kr.RecallDecision, int]:
    """The recall section for `text` (the current message), its decision, and its excerpt count.

    `carried` is the text already in the request (stored prompt with any
    handoff, the thread's history): excerpts that substantially overlap it
    are suppressed. It is the history before any budget trimming (the
    dynamic context's own size is part of what trimming needs), so an excerpt
    repeating a turn that is then trimmed away stays suppressed: the safe side.
    `handoff_sources`: the conversations this thread's handoffs came from (a
    send's `ThreadHandoffs.source_ids`, read when `recall_may_run`); without
    them they are read here when recall runs (`thread_handoff_source_ids`).
    """
    keywords = kr.extract_keywords(text)
    if birth_period or not keywords:
        return "", kr.recall_decision(text, keywords=keywords, birth_period=birth_period), 0
    persona = conversation.persona
    # Never the current thread; never the source a handoff already carried in.
    sources = handoff_sources if handoff_sources is not None else thread_handoff_source_ids(conversation)
    exclude = {conversation.pk} | sources
    topics: frozenset[str] = frozenset()
    named: list[str] = []
    named_hits: list[kr.RecallHit] = []
    if not kr.has_recall_cue(text) and kr.is_short(text):
        # The skip rule needs two database facts about the keywords.
        titles = title_terms(keywords, persona=persona, exclude=exclude)
        named = [k for k in keywords if k in kr.named_words(text) and k not in titles]
        found: set[str] = set()
        if named:
            named_hits = recall_candidates(named, persona=persona, exclude=exclude)
            live = live_message_ids(named_hits)
            for hit in named_hits:
                if hit.message_id in live:
                    found |= set(named).intersection(kr.words(hit.content))
        topics = kr.named_topics(keywords, text=text, title_terms=titles, message_terms=found)
    decision = kr.recall_decision(text, keywords=keywords, topics=topics)
    if not decision.run:
        return "", decision, 0
    context = overlap.ContextText(carried)
    if named and set(decision.terms) <= set(named):
        hits, complete = named_hits, True  # the same search was just made; ranking keeps only the decided terms
    else:
        hits, complete = best_recall_candidates(decision.terms, persona=persona, exclude=exclude)
    excerpts = overlap.select_excerpts(hits, decision.terms, context=context, keep=live_message_ids)
    if len(excerpts) < kr.MAX_EXCERPTS and not complete:
        # The best candidates' prefix ran out (branch or overlap checks): rank them all.
        hits = recall_candidates(decision.terms, persona=persona, exclude=exclude)
        excerpts = overlap.select_excerpts(hits, decision.terms, context=context, keep=live_message_ids)
    section = kr.render_recall_section(
        excerpts, persona=persona, owner_name=owner_name, display_name=display_name
    )
    return section, decision, len(excerpts)


def dynamic_context_build(
    conversation: Conversation,
    *,
    branch: Sequence[Message],
    static_prompt: str,
    history: Sequence[str],
    settings_row: AssistantSettings,
    handoff_sources: set[UUID] | None = None,
    born_above: bool = False,
) -> DynamicContext:
    """The dynamic context for the reply to the last user turn of `branch`.

    `history` is the thread's projectable history text (the current message last);
    `settings_row` is the AssistantSettings row the send read;
    `handoff_sources` as `recall_section`'s; `born_above`: a finished ordinary reply lies above `branch`
    (a send reads only the newest stretch of its branch; its first row's `branch_born` says so).
    """
    user_message = next((m for m in reversed(branch) if m.role == Role.USER), None)
    birth = not born_above and in_birth_period(branch)
    pinned = _pinned_section(user_message, settings_row.owner_name)
    recall, decision, count = recall_section(
        conversation,
        text=user_message.content if user_message else "",
        birth_period=birth,
        carried=[static_prompt, *history],
        owner_name=settings_row.owner_name,
        display_name=settings_row.display_name,
        handoff_sources=handoff_sources,
    )
    text = "\n\n".join(part for part in (pinned, recall) if part)
    return DynamicContext(
        text=text, birth_period=birth, recall_reason=decision.reason, excerpts=count, pinned_character=bool(pinned)
    )
