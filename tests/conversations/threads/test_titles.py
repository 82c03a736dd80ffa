"""Automatic titles (issue 19, "The smaller ones"): the first message's words without its Markdown,
at most 60 characters cut at a word boundary; Branch / Fresh Chat carries its source's title, and its origin
is a badge beside the title, never a suffix (issue 34). Issue 41: a heading's text is the title where there is
one, code blocks stay out of it, and a copy (Branch, Fork, an archive continuation) is numbered, "Title (2)"."""

from __future__ import annotations

import pytest
from django.test import Client
from hypothesis import given
from hypothesis import strategies as st

from conversations.services.threads.titles import (
    AUTO_TITLE_CHARACTERS,
    copy_title,
    markdown_plain_text,
    title_from_first_message,
    title_shortened,
)
from tests.support.factories import sent_and_answered, thread
from transcript.models import Conversation


@pytest.mark.parametrize(
    ("first_message", "title"),
    [
        ("# Plans for the *garden*", "Plans for the garden"),
        ("## Heading\n\nthen **bold** and __strong__ and _soft_ words", "Heading"),
        ("then **bold** and __strong__ and _soft_ words", "then bold and strong and soft words"),
        ("See [the harbour guide](https://example.com/guide \"t\") today", "See the harbour guide today"),
        ("![a lighthouse at dusk](https://example.com/l.png) look", "a lighthouse at dusk look"),
        ("Why does `len(x)` fail?", "Why does len(x) fail?"),
        ("```python\nprint('hi')\n```", "print('hi')"),  # code only: its code
        ("    indented()\n    code()", "indented() code()"),
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


# The class of first messages (issue 41): code fences, indented code, inline code, headings (ATX and setext,
# first or later, empty), lists, links, quotes, tables, emptiness.
@pytest.mark.parametrize(
    ("first_message", "title"),
    [
        ("Garden plans\n\n```python\ndef hi(): return 42\n```\n\nWhat should I plant?",
         "Garden plans What should I plant?"),
        ("Garden plans\n\n    def hi(): return 42\n\nWhat should I plant?", "Garden plans What should I plant?"),
        ("~~~\nx = 1\n~~~\nand then words", "and then words"),
        ("Why does `len(x)` fail here?", "Why does len(x) fail here?"),
        ("Some words first\n\n## Garden plans\n\n```\ncode\n```", "Garden plans"),
        ("Garden plans\n============\n\nmore words", "Garden plans"),
        ("#\n\nwords after an empty heading", "words after an empty heading"),
        ("# [The *guide*](https://example.com) to `soil`\n\n# Second", "The guide to soil"),
        ("- milk\n- eggs\n\n```sh\nrm -rf /\n```", "milk eggs"),
        ("See [the map](https://example.com/map) and ![a gull](g.png)", "See the map and a gull"),
        ("> a quote\n\n```\ncode\n```", "a quote"),
        ("```\n```", "``` ```"),
        ("", ""),
        ("   \n\t", ""),
    ],
)
def test_first_message_title_prefers_a_heading_and_leaves_code_blocks_out(first_message, title):
    assert title_from_first_message(first_message) == title


@given(st.lists(st.sampled_from(["# Heading words", "plain words here", "```\ncode block\n```", "- item",
                                 "`inline`", "[link](https://x.example)", "", "~~~\nfenced code\n~~~"]), max_size=6))
def test_a_title_never_holds_a_code_block_when_there_are_other_words(blocks):
    message = "\n\n".join(blocks)
    title = title_from_first_message(message)
    if any(block and "code" not in block for block in blocks):
        assert "code block" not in title and "fenced code" not in title, (message, title)
    if "# Heading words" in blocks:
        assert title == "Heading words"


def test_a_copy_is_numbered_after_its_family():
    assert copy_title("Evening *walk*", ["Evening *walk*"]) == "Evening *walk* (2)"
    assert copy_title("Evening *walk*", ["Evening *walk*", "Evening *walk* (2)", "Other (7)"]) == "Evening *walk* (3)"
    # A copy of a copy joins the family; numbers go on from the highest, never reused.
    assert copy_title("Evening *walk* (3)", ["Evening *walk*", "Evening *walk* (3)"]) == "Evening *walk* (4)"
    assert copy_title("", []) == "New chat"
    assert copy_title("Heron watch", []) == "Heron watch"  # an archive document's first continuation
    assert copy_title("Heron watch", ["Heron watch"]) == "Heron watch (2)"
    assert copy_title("Evening *walk*", ["Evening *walk*", "Evening *walk* extra"]) == "Evening *walk* (2)"
    long_source = "harbour " * 20
    first = copy_title(long_source, [long_source.strip()])
    assert first.endswith("harbour… (2)") and len(first) <= AUTO_TITLE_CHARACTERS
    second = copy_title(long_source, [long_source.strip(), first])
    assert second.endswith("… (3)") and len(second) <= AUTO_TITLE_CHARACTERS


@given(st.text(max_size=120), st.lists(st.text(max_size=80), max_size=5))
def test_any_copy_title_is_bounded_printable_and_new(source, taken):
    title = copy_title(source, taken)
    assert len(title) <= AUTO_TITLE_CHARACTERS and "\x00" not in title and "\n" not in title
    assert title not in taken
    title.encode("utf-8")


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
    assert response.status_code == 201 and response.json()["title"] == "Evening *walk* (2)"
    branch = Conversation.objects.get(pk=response.json()["id"])
    assert (branch.display_title, branch.origin_badge, branch.title_auto) == ("Evening *walk* (2)", "Branch", True)


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
    assert fork.json()["title"] == "Harbour plans (2)" and "(fork)" not in page
    assert '<span class="badge badge-origin" data-origin-badge>Fork</span>' in page
    assert '<span class="tag tag-origin" data-origin-tag>fork</span>' in page
