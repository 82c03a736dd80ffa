"""The message list without `limit` (issue 40): the whole live branch, read a segment at a time and
streamed once it is longer than one segment, with the same bytes as building the whole list at once.

The reference below is the list as it was built before: every row of the tree
read, the head walked up to the root, each message's versions taken from the
same rows, the whole `{"results": [...]}` rendered by the API's renderer.
Random trees (sends, retries, edits from earlier turns, new roots, rewinds,
version switches, a stored prompt, a reply left streaming by a dead process)
are listed both ways, with segments of a few messages (so the stream has many)
and of the default size.
"""

from __future__ import annotations

import datetime
import json
import random

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.renderers import JSONRenderer

from conversations.services.message_selectors import MessageShown
from conversations.services.threads.thread_writes import conversation_rewind, conversation_switch
from conversations.web import serializers
from conversations.web.messages import branch_list
from elion.base.errors import ServiceError
from tests.support.factories import thread, turns_append
from transcript.attachments.manifests import manifests_for
from transcript.leases import stale_streams_read_as_interrupted
from transcript.models import Message, MessageStatus, Role
from transcript.siblings import Siblings

pytestmark = pytest.mark.django_db


def reference_list(conversation) -> bytes:
    """The list as the whole-tree read built it (from scratch: no walk or sibling helper of the app's)."""
    rows = {m.id: m for m in Message.objects.filter(conversation=conversation).exclude(role=Role.SYSTEM)}
    branch = []
    current = conversation.head_id
    while current is not None:
        branch.append(rows[current])
        current = rows[current].parent_id
    branch.reverse()
    children: dict = {}
    for message in sorted(rows.values(), key=lambda m: m.seq):
        children.setdefault(message.parent_id, []).append(message.id)
    siblings = {}
    for message in branch:
        ids = tuple(children[message.parent_id])
        siblings[message.id] = Siblings(ids=ids, index=ids.index(message.id) + 1)
    stale_streams_read_as_interrupted(branch)  # as every read shows a dead stream
    manifests = manifests_for(branch)
    shown = [MessageShown(m, manifests.get(m.id, []), siblings[m.id]) for m in branch]
    return JSONRenderer().render({"results": serializers.messages_repr(shown)})


def listed(client: Client, conversation) -> tuple[bytes, bool]:
    response = client.get(f"/api/conversations/{conversation.id}/messages/")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return body, response.streaming


def random_tree(rng: random.Random):
    conversation = thread(("user", "hello"), ("assistant", "hi"))
    for step in range(rng.randint(10, 40)):
        conversation.refresh_from_db()
        rows = list(Message.objects.filter(conversation=conversation).exclude(role=Role.SYSTEM))
        users = [m for m in rows if m.role == Role.USER]
        replies = [m for m in rows if m.role == Role.ASSISTANT and m.status != MessageStatus.STREAMING]
        operation = rng.choice(["send", "send", "send", "retry", "edit", "root", "rewind", "switch"])
        try:
            if operation == "send":
                turns_append(conversation, ("user", f"question {step} ✓"), ("assistant", f"answer {step}\u2028"))
            elif operation == "retry":
                turns_append(conversation, ("assistant", f"again {step}"), parent=rng.choice(users))
            elif operation == "edit":
                turns_append(conversation, ("user", f"edited {step}"), ("assistant", f"re {step}"),
                             parent=rng.choice(replies))
            elif operation == "root":
                turns_append(conversation, ("user", f"new root {step}"), ("assistant", f"r {step}"), parent=None)
            elif operation == "rewind":
                conversation_rewind(conversation_id=conversation.id, message_id=rng.choice(replies).id)
            else:
                conversation_switch(conversation_id=conversation.id, message_id=rng.choice(rows).id)
        except ServiceError:
            pass  # a refused operation leaves the tree as it was
    conversation.refresh_from_db()
    if rng.random() < 0.5:
        Message.objects.create(conversation=conversation, seq=conversation.last_seq + 1, role=Role.SYSTEM,
                               content="stored prompt")
        conversation.last_seq += 1
        conversation.save(update_fields=["last_seq"])
    if rng.random() < 0.5:  # a reply whose process died: listed as interrupted, both ways
        past = timezone.now() - datetime.timedelta(minutes=5)
        turns_append(conversation, ("user", "still there?"), ("assistant", "partial"),
                     status=MessageStatus.STREAMING, lease_expires_at=past)
    conversation.refresh_from_db()
    return conversation


@pytest.mark.parametrize("seed", range(12))
def test_the_streamed_list_is_byte_for_byte_the_whole_list_over_random_trees(seed, monkeypatch):
    conversation = random_tree(random.Random(seed))
    client = Client()
    expected = reference_list(conversation)
    whole, _ = listed(client, conversation)
    assert whole == expected
    monkeypatch.setattr(branch_list, "LIST_BATCH", 3)
    streamed, streaming = listed(client, conversation)
    assert streamed == expected
    assert streaming == (len(json.loads(expected)["results"]) > 3)


def test_an_empty_conversation_lists_nothing():
    conversation = thread()
    assert listed(Client(), conversation) == (b'{"results":[]}', False)


def test_a_long_list_is_read_a_segment_at_a_time(monkeypatch):
    """No statement of a streamed list returns more than about a segment's rows: the process never holds
    the thread (here 12 segments of 20; the walk noting where each ends returns a row per segment)."""
    monkeypatch.setattr(branch_list, "LIST_BATCH", 20)
    conversation = thread(*[("user", f"q {i}") if i % 2 == 0 else ("assistant", f"a {i}") for i in range(240)])
    client = Client()
    listed(client, conversation)  # the first request of a process also syncs the owner row
    with CaptureQueriesContext(connection) as queries:
        body, streaming = listed(client, conversation)
    assert streaming and len(json.loads(body)["results"]) == 240
    largest = 0
    for query in queries.captured_queries:
        sql = query["sql"]
        if sql.lstrip().upper().startswith(("SELECT", "WITH")) and "%s" not in sql:
            with connection.cursor() as cursor:
                cursor.execute(sql)
                largest = max(largest, len(cursor.fetchall()))
    assert 20 <= largest <= 2 * 20 + 1, largest
