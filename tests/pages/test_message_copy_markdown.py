"""Copy a message as its Markdown (issue 34), desktop and phone: the ⋯ menu's Copy puts the message as it was
written on the clipboard — heading marks, list bullets and code fences kept — not the rendered text; the route it
reads answers only a shown message of that conversation."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client
from playwright.sync_api import Page, expect

from tests.support.chat_page import SIZES
from tests.support.factories import thread

MARKDOWN = "# Plans\n\n- milk\n- *eggs*\n\n```python\nprint('hi')\n```\n\nSee [the guide](https://example.com)."


@pytest.mark.browser
@pytest.mark.parametrize("size", SIZES)
def test_copy_puts_the_messages_markdown_on_the_clipboard(live_app, page: Page, size):
    conversation = thread(("user", "## My *question*\n\n1. one\n2. two"), ("assistant", MARKDOWN))
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_app.url)
    page.set_viewport_size(SIZES[size])
    page.goto(f"{live_app.url}/c/{conversation.id}/")
    for role, expected in (("assistant", MARKDOWN), ("user", "## My *question*\n\n1. one\n2. two")):
        bubble = page.locator(f".message-{role}").last
        bubble.hover()
        bubble.get_by_role("button", name="Message actions").click()
        bubble.get_by_role("menuitem", name="Copy").click()
        expect(bubble.get_by_role("status")).to_have_text("Copied")
        assert page.evaluate("navigator.clipboard.readText()") == expected
    assert page.js_errors == []


@pytest.mark.django_db
def test_the_markdown_route_answers_a_shown_message_only():
    conversation = thread(("user", "hello"), ("assistant", MARKDOWN))
    other = thread(("user", "elsewhere"), ("assistant", "there"))
    client = Client()
    response = client.get(f"/c/{conversation.id}/messages/{conversation.head_id}/markdown/")
    assert response.status_code == 200 and response.content.decode() == MARKDOWN
    assert response["Content-Type"].startswith("text/markdown")
    assert client.get(f"/c/{conversation.id}/messages/{other.head_id}/markdown/").status_code == 404
    assert client.get(f"/c/{conversation.id}/messages/{uuid.uuid4()}/markdown/").status_code == 404
    assert client.get(f"/c/{conversation.id}/messages/not-a-uuid/markdown/").status_code in (400, 404)
    assert client.post(f"/c/{conversation.id}/messages/{conversation.head_id}/markdown/").status_code == 405
