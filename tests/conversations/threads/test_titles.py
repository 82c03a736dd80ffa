"""Automatic titles (issue 19, "The smaller ones"): the first message's words without its Markdown,
at most 60 characters cut at a word boundary; Branch / Fresh Chat carries its source's title, and its origin
is a badge beside the title, never a suffix (issue 34)."""

from __future__ import annotations

import pytest
from django.test import Client
from hypothesis import given
from hypothesis import strategies as st

from conversations.models import Conversation
from conversations.services.threads.titles import (
    AUTO_TITLE_CHARACTERS,
    branch_title,
    markdown_plain_text,
    title_from_first_message,
    title_shortened,
)
from tests.support.factories import sent_and_answered, thread


@pytest.mark.parametrize(
    ("first_message", "title"),
    [
        ("# Plans for the *garden*", "Plans for the garden"),
        ("## Heading\n\nthen **bold** and __strong__ and _soft_ words", "Heading then bold and strong and soft words"),
        ("See [the harbour guide](https://example.com/guide \"t\") today", "See the harbour guide today"),
        ("![a lighthouse at dusk](https://example.com/l.png) look", "a lighthouse at dusk look"),
        ("Why does `len(x)` fail?", "Why does len(x) fail?"),
        ("```python\nprint('hi')\n```", "print('hi')"),
        ("- milk\n- eggs\n  1. brown\n* bread", "milk eggs brown bread"),
        ("> quoted *line*\n> second", "quoted line second"),
        ("~~old~~ new | plan", "old new | plan"),
        ("| a | b |\n|---|---|\n| 1 | 2 |", "a b 1 2"),
        ("<b>raw</b> html stays text", "<b>raw</b> html stays text"),
        ("\\*not emphasis\\*", "*not emphasis*"),
        ("---", "---"),
    ],
)
def test_first_message_title_keeps_the_words_and_drops_the_markdown(first_message, title):
    assert title_from_first_message(first_message) == title


def test_long_first_message_title_is_cut_at_a_word_boundary_with_an_ellipsis():
    words = "The quiet harbour at dusk with the boats coming home one after another slowly"
    title = title_from_first_message(f"# {words}")
    assert len(title) <= AUTO_TITLE_CHARACTERS and title.endswith("…")
    assert words.startswith(title[:-1]) and words[len(title) - 1] == " "


def test_title_of_exactly_the_limit_is_not_cut():
    exact = ("word " * 12)[:AUTO_TITLE_CHARACTERS].strip() + "s"
    assert len(exact) == AUTO_TITLE_CHARACTERS
    assert title_shortened(exact) == exact


def test_one_word_longer_than_a_title_is_cut_inside_the_word():
    title = title_shortened("x" * 200)
    assert title == "x" * (AUTO_TITLE_CHARACTERS - 1) + "…"


def test_attachments_name_a_message_without_text():
    assert title_from_first_message("   ", ["plan.pdf", "map.png"]) == "plan.pdf, map.png"


def test_nul_controls_and_lone_surrogates_never_reach_a_title():
    title = title_from_first_message("he\x00llo \ud800wor\x07ld *now*")
    assert title == "hello world now"
    title.encode("utf-8")


@given(st.text(max_size=400))
def test_any_text_gives_a_printable_bounded_title(text):
    title = title_from_first_message(text)
    assert len(title) <= AUTO_TITLE_CHARACTERS
    title.encode("utf-8")
    assert "\x00" not in title and "\n" not in title
    assert markdown_plain_text(text) == " ".join(markdown_plain_text(text).split())


def test_branch_title_names_its_source():
    assert branch_title("Evening *walk*") == "Evening *walk*"
    assert branch_title("") == "New chat"
    long_source = "harbour " * 20
    assert branch_title(long_source).endswith("harbour…")
    assert len(branch_title(long_source)) <= AUTO_TITLE_CHARACTERS


@pytest.mark.django_db(transaction=True)
def test_first_send_titles_the_conversation_without_markdown(scripted_provider):
    conversation = Conversation.objects.create(persona="elion")
    sent_and_answered(conversation, "## Help with **[my garden](https://example.com)** plan")
    conversation.refresh_from_db()
    assert conversation.title == "Help with my garden plan"
    assert conversation.title_auto is True


@pytest.mark.django_db
def test_branch_is_titled_after_its_source_from_the_moment_it_is_created():
    source = thread(("user", "hello"), ("assistant", "hi there"), title="Evening *walk*")
    response = Client().post(f"/api/conversations/{source.id}/branch/", headers={"Idempotency-Key": "k"})
    assert response.status_code == 201 and response.json()["title"] == "Evening *walk*"
    branch = Conversation.objects.get(pk=response.json()["id"])
    assert (branch.display_title, branch.origin_badge, branch.title_auto) == ("Evening *walk*", "Branch", True)


@pytest.mark.django_db
def test_branch_of_an_untitled_source_is_titled_new_chat_branch():
    source = thread(("user", "hello"), ("assistant", "hi there"))
    response = Client().post(f"/api/conversations/{source.id}/branch/", headers={"Idempotency-Key": "k"})
    assert response.json()["title"] == "New chat"


@pytest.mark.django_db
def test_origins_are_badges_beside_the_title_not_suffixes():
    source = thread(("user", "hello"), ("assistant", "hi there"), title="Harbour plans")
    fork = Client().post(f"/api/conversations/{source.id}/fork/", {"message_id": str(source.head_id)},
                         content_type="application/json", headers={"Idempotency-Key": "k"})
    assert fork.status_code == 201, fork.content
    page = Client().get(f"/c/{fork.json()['id']}/").content.decode()
    assert fork.json()["title"] == "Harbour plans" and "(fork)" not in page
    assert '<span class="badge badge-origin" data-origin-badge>Fork</span>' in page
    assert '<span class="tag tag-origin" data-origin-tag>fork</span>' in page
