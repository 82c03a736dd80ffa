"""Small page words of issue 34: the sentence under the token pill that reconciles its two numbers, and the
query's words marked in Past Conversation Search results (escaped, like the archive's)."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.support.factories import thread
from transcript.search_index import message_search_index_sync

pytestmark = pytest.mark.django_db


def test_the_token_pill_says_what_its_two_numbers_are():
    conversation = thread(("user", "hello"), ("assistant", "hi"))
    page = Client().get(f"/c/{conversation.id}/").content.decode()
    assert "data-estimate-explained>The header’s “≈ tokens” counts only the messages shown" in page.replace("'", "’")
    assert "“Total input” below is everything the last request sent" in page


def test_search_results_mark_the_matched_words():
    thread(("user", "The lighthouse <b>keeper</b> waved"), ("assistant", "Lighthouses need keepers."),
           title="Harbour")
    message_search_index_sync()
    page = Client().get("/search/?q=lighthouse").content.decode()
    assert '<mark class="match">lighthouse</mark> &lt;b&gt;keeper&lt;/b&gt; waved' in page
    assert "<b>keeper</b>" not in page


def test_a_branch_bubbles_heading_sits_one_level_under_the_chat_title():
    source = thread(("user", "hello"), ("assistant", "hi there"), title="Evening walk")
    branch_id = Client().post(f"/api/conversations/{source.id}/branch/", headers={"Idempotency-Key": "k"}).json()["id"]
    page = Client().get(f"/c/{branch_id}/").content.decode()
    assert '<h2 class="handoff-heading">Continued from “Evening walk”</h2>' in page
    assert "<h3>Continued from" not in page
