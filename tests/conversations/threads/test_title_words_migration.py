"""Migration 0020 (issue 34, "Titles are words"): existing titles the app made are rewritten once — a Branch's and
a Fork's suffix goes (the origin is a badge now), a raw first-message title becomes its words — and a title the
owner typed is kept. An archive continuation becomes origin `imported`. Runs the migration's own function on rows
in the test database."""

from __future__ import annotations

import importlib

import pytest
from django.test import Client

from tests.support.factories import thread
from tests.support.migration_state import apps_at
from transcript.models import Conversation, ConversationOrigin, Message, MessageKind

pytestmark = pytest.mark.django_db

migration = importlib.import_module("conversations.migrations.0020_title_words")

RAW = "## Show me code please\n\n# Heading one two\n\n```python\ndef hi(): return 42\n```\nand more words after it"
OLD_TITLE = " ".join(RAW.split())[:60]


def rewritten(conversation: Conversation) -> Conversation:
    migration.rewrite_auto_titles(apps_at("conversations", "0020_title_words"), None)
    conversation.refresh_from_db()
    return conversation


def test_a_raw_first_message_title_becomes_its_words():
    conversation = thread(("user", RAW), ("assistant", "ok"), title=OLD_TITLE)
    assert OLD_TITLE.startswith("## Show me")
    conversation = rewritten(conversation)
    assert conversation.title == "Show me code please"  # the first heading (issue 41)
    assert conversation.title_auto is True


def test_a_title_the_owner_typed_is_kept():
    conversation = thread(("user", RAW), ("assistant", "ok"), title="My *own* (branch) words")
    conversation = rewritten(conversation)
    assert (conversation.title, conversation.title_auto) == ("My *own* (branch) words", False)


def test_branch_and_fork_suffixes_become_badges():
    source = thread(("user", RAW), ("assistant", "ok"), title=OLD_TITLE)
    branch_id = Client().post(f"/api/conversations/{source.id}/branch/", headers={"Idempotency-Key": "k"}).json()["id"]
    Conversation.objects.filter(pk=branch_id).update(title=f"{OLD_TITLE} (branch)", title_auto=False)
    fork = thread(("user", RAW), ("assistant", "ok"), title=f"{OLD_TITLE} (fork)", origin=ConversationOrigin.FORK)

    branch = rewritten(Conversation.objects.get(pk=branch_id))
    fork = rewritten(fork)
    words = "Show me code please"  # the first heading (issue 41)
    assert (branch.title, branch.origin_badge, branch.title_auto) == (words, "Branch", True)
    assert (fork.title, fork.origin_badge, fork.title_auto) == (words, "Fork", True)


def test_an_archive_continuation_becomes_imported():
    continued = thread(origin=ConversationOrigin.BRANCH)
    continued.last_seq = 1
    continued.save()
    Message.objects.create(conversation=continued, seq=1, role="assistant", kind=MessageKind.HANDOFF_ARTIFACT,
                           content="Continues an archive document", metadata={"source_document_id": 7})
    continued = rewritten(continued)
    assert (continued.origin, continued.origin_badge) == ("imported", "Imported")


def test_the_rewrite_runs_once_and_changes_nothing_the_second_time():
    conversation = rewritten(thread(("user", RAW), ("assistant", "ok"), title=OLD_TITLE))
    before = Conversation.objects.values_list("title", "origin", "title_auto").get(pk=conversation.pk)
    assert Conversation.objects.values_list("title", "origin", "title_auto").get(pk=rewritten(conversation).pk) == before


def test_renaming_marks_the_title_as_typed():
    conversation = thread(("user", "hello"), ("assistant", "hi"))
    Conversation.objects.filter(pk=conversation.pk).update(title_auto=True)
    response = Client().patch(f"/api/conversations/{conversation.id}/", {"title": "Mine"}, content_type="application/json")
    assert response.status_code == 200
    conversation.refresh_from_db()
    assert (conversation.title, conversation.title_auto) == ("Mine", False)
