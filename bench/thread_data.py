"""Bulk-loaded threads for the send benches: valid trees of alternating user and assistant turns."""

from __future__ import annotations

import random
import time
import uuid

_PROSE = (
    "morning light garden tea quiet letter river memory walk music rain window book friend "
    "promise story evening candle ocean forest road home laughter question answer dream "
    "voice silence thread season winter summer autumn spring coffee kitchen stars moon "
    "notebook poem song city bridge train journey tomorrow yesterday today careful gentle "
    "bright slow warm honest curious patient small wide deep open simple strange familiar"
)
_WORDS = _PROSE.split()


def text_pools(rng: random.Random) -> tuple[list[str], list[str]]:
    def text(lo: int, hi: int) -> str:
        target = rng.randint(lo, hi)
        words: list[str] = []
        while sum(len(w) + 1 for w in words) < target:
            words.append(rng.choice(_WORDS))
        return (" ".join(words).capitalize() + ".")[: target + 1]

    return [text(40, 320) for _ in range(97)], [text(200, 1400) for _ in range(89)]


def bound_fields() -> dict[str, str]:
    """The provider binding the server will compute, stamped on loaded rows (as real history has)."""
    try:
        from transcript.provider.binding import binding_fields, configured_provider
    except ImportError:
        return {}
    return binding_fields(configured_provider())


def load_data(n_conversations: int, per_conversation: int, seed: int) -> tuple[list[uuid.UUID], dict]:
    """Bulk-load valid trees: alternating user/assistant chains, seq 1..M, head at the tip."""
    from django.apps import apps
    from django.db import connection, transaction

    from transcript.models import Conversation, Message, MessageStatus, Role

    rng = random.Random(seed)
    users, assistants = text_pools(rng)
    binding = bound_fields()
    try:
        snapshot_model = apps.get_model("memories", "ConversationMemorySnapshot")
    except LookupError:
        snapshot_model = None
    from django.utils import timezone

    now = timezone.now()
    ids: list[uuid.UUID] = []
    chunk = 500
    started = time.perf_counter()
    with transaction.atomic():
        for start in range(0, n_conversations, chunk):
            conversations, messages, snapshots = [], [], []
            for i in range(start, min(start + chunk, n_conversations)):
                cid = uuid.UUID(int=rng.getrandbits(128), version=4)
                parent = None
                for seq in range(1, per_conversation + 1):
                    user = seq % 2 == 1
                    pool = users if user else assistants
                    mid = uuid.UUID(int=rng.getrandbits(128), version=4)
                    messages.append(
                        Message(
                            id=mid,
                            conversation_id=cid,
                            parent_id=parent,
                            seq=seq,
                            role=Role.USER if user else Role.ASSISTANT,
                            content=pool[(i * 31 + seq) % len(pool)],
                            status=MessageStatus.COMPLETE,
                            **binding,
                        )
                    )
                    parent = mid
                conversations.append(
                    Conversation(id=cid, title=f"Bench thread {i + 1}", head_id=parent, last_seq=per_conversation)
                )
                if snapshot_model is not None:
                    snapshots.append(snapshot_model(conversation_id=cid, captured_at=now, provenance="captured"))
                ids.append(cid)
            Conversation.objects.bulk_create(conversations)
            Message.objects.bulk_create(messages)
            if snapshots:
                snapshot_model.objects.bulk_create(snapshots)
    # The search index rows the triggers wrote are tokenised before ANALYZE, as a
    # running app's would be; statistics taken while every row was pending would
    # steer the per-send "pending rows" lookup away from its partial index.
    from transcript.search_index import message_search_index_sync

    message_search_index_sync()
    load_seconds = time.perf_counter() - started
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    analyze_seconds = time.perf_counter() - started
    counts = {
        "conversations": Conversation.objects.count(),
        "messages": Message.objects.count(),
        "load_seconds": load_seconds,
        "analyze_seconds": analyze_seconds,
        "snapshots": snapshot_model is not None,
        "vendor": connection.vendor,
    }
    connection.close()
    return ids, counts


def long_window(size: int) -> list[dict]:
    """A long thread's Responses input of about `size` items, made by the app's own wire code: the system
    prompt, then user turns, replies kept as output message items (with `phase`) and, before every third
    reply, a tool round (a function call and its output). No reasoning items: the scripted provider
    verifies their encrypted content, which only a real reply carries."""
    from transcript.provider.wire import output_item_message, responses_input

    rng = random.Random(size)
    messages: list[dict] = [{"role": "system", "content": "You are Elion. " * 200}]
    turn = 0
    while len(messages) < size:
        turn += 1
        messages.append({"role": "user", "content": f"Turn {turn}: how did the garden look this morning? " * 3})
        if turn % 3 == 0:
            call = {"call_id": f"call_{turn}", "item_id": f"fc_{turn}", "name": "search_archive",
                    "arguments": {"query": "garden " * rng.randint(1, 5)}}
            messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
            messages.append({"role": "tool", "call_id": f"call_{turn}", "content": "No match. " * rng.randint(5, 40)})
        messages.append(output_item_message({
            "type": "message", "id": f"msg_{turn}", "role": "assistant", "status": "completed", "phase": "final_answer",
            "content": [{"type": "output_text", "text": "The roses had opened overnight. " * 12, "annotations": []}],
        }))
    return responses_input(messages[:size])
