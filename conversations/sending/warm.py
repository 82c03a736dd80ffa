"""A long thread made ready for its first send in this process, when its page opens.

A process keeps what a send of a long thread reads and builds (the rows, the
branch, its history turns, recall's index of the text they carry), so every
send costs what changed since the last one; but the first send after the
process starts reads and builds all of it (about half a second at 10,000
messages). The chat page opens its WebSocket as it loads
(`conversations.web.messages.consumers`), which asks for this, so by the time the
owner sends, the work is done. Threads shorter than
`ELION_TREE_CACHE_MIN_ROWS` are not kept and are cheap to read: nothing.
"""

from __future__ import annotations

from uuid import UUID

from django.conf import settings
from django.db import connection

from continuity.rules.request_store import send_context_warm
from conversations.models import Conversation


def thread_warm(conversation_id: UUID) -> bool:
    """Read `conversation_id`'s thread into this process's kept copies if it is long; whether it did.

    Runs in a pool thread of its own (not the one sends share), so it closes that thread's database
    connection when done: the pool thread may next serve anything.
    """
    try:
        conversation = Conversation.objects.filter(pk=conversation_id, deletion_generation__isnull=True).first()
        if conversation is None or conversation.last_seq < settings.ELION_TREE_CACHE_MIN_ROWS:
            return False
        send_context_warm(conversation)
        return True
    finally:
        connection.close()
