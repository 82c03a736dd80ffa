"""Browser (issue 35): the quiet card under a reply that proposed memories (Approve, Edit, Dismiss, then
"Also use it in this chat"), Memories → Suggestions with the link to the source message, a memory's history
and source, and the chat's "Memories in this chat", on desktop and phone, with no script or CSP error."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from conversations.services.threads.thread_writes import conversation_create
from memories.models import Memory, MemoryProposal, MemorySource, ProposalStatus, SnapshotMembership
from memories.services.memory_writes import memory_add, memory_edit
from memories.services.proposals import memory_propose, proposal_approve, proposal_dismiss
from tests.support.factories import turns_append
from tests.support.scripted_provider import ScriptedReply
from transcript.models import Role

pytestmark = pytest.mark.browser

COMPOSER = "[data-composer-input]"
DESKTOP = {"width": 1366, "height": 900}
PHONE = {"width": 390, "height": 844}
SIZES = pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
FACTS = ("AUMA keeps bees on the hill.", "AUMA's cat is called Juniper.", "AUMA dislikes mint tea.")


def propose(text: str, call_id: str) -> dict:
    return {"name": "propose_memory", "call_id": call_id,
            "arguments": {"text": text, "category": "general", "importance": 3, "reason": "It keeps coming up."}}


def card_of(page: Page, text: str):
    return page.locator("[data-proposal-card]").filter(has_text=text)


@SIZES
def test_the_cards_three_actions_and_also_use_it_in_this_chat(live_app, page: Page, scripted_server, viewport):
    page.set_viewport_size(viewport)
    scripted_server.script(
        ScriptedReply(tool_calls=[propose(text, f"call_{i}") for i, text in enumerate(FACTS)]),
        ScriptedReply(text="I noted a few things you might want kept."),
    )
    page.goto(live_app.url)
    if viewport is PHONE:
        page.locator("[data-sidebar-open]").click()
    page.locator(".sidebar").get_by_role("button", name="New chat").click()
    page.wait_for_url(re.compile(r"/c/[0-9a-f-]+/$"))
    page.fill(COMPOSER, "My bees, my cat Juniper, and that awful mint tea.")
    page.press(COMPOSER, "Enter")

    reply = page.locator(".message-assistant").last
    expect(reply).to_contain_text("I noted a few things")
    expect(reply.locator("[data-proposal-card]")).to_have_count(3)
    conversation_id = page.url.rstrip("/").rsplit("/", 1)[1]

    bees = card_of(page, FACTS[0])
    bees.get_by_role("button", name="Approve").click()
    expect(bees.locator("[data-proposal-note]")).to_contain_text("new chats only")
    approved = card_of(page, FACTS[0])
    expect(approved).to_have_attribute("data-proposal-status", "approved")
    memory = Memory.objects.get(text=FACTS[0])
    assert memory.source == MemorySource.PROPOSAL
    assert not SnapshotMembership.objects.filter(conversation_id=conversation_id, memory=memory).exists()
    approved.get_by_role("button", name="Also use it in this chat").click()
    expect(card_of(page, FACTS[0]).locator("[data-proposal-in-chat]")).to_have_text("Used in this chat")
    assert SnapshotMembership.objects.filter(conversation_id=conversation_id, memory=memory).exists()

    cat = card_of(page, FACTS[1])
    cat.locator("[data-proposal-edit] summary").click()
    cat.locator("[data-proposal-edit-text]").fill("AUMA's cat Juniper is a grey tabby.")
    cat.get_by_role("button", name="Approve with these edits").click()
    expect(card_of(page, "grey tabby")).to_have_count(0)  # the card keeps Elion's words; the memory has the edit
    expect(card_of(page, FACTS[1])).to_have_attribute("data-proposal-status", "approved")
    assert Memory.objects.filter(text="AUMA's cat Juniper is a grey tabby.").exists()

    tea = card_of(page, FACTS[2])
    tea.get_by_role("button", name="Dismiss").click()
    expect(card_of(page, FACTS[2])).to_have_attribute("data-proposal-status", "dismissed")
    assert MemoryProposal.objects.get(text=FACTS[2]).status == ProposalStatus.DISMISSED
    assert not Memory.objects.filter(text=FACTS[2]).exists()

    # A reload renders the same cards from the server.
    page.reload()
    expect(card_of(page, FACTS[0]).locator("[data-proposal-in-chat]")).to_be_visible()
    assert page.js_errors == []


def seeded_proposals() -> tuple:
    conversation = conversation_create(title="Garden talk")
    user, reply = turns_append(conversation, (Role.USER, "The hives are humming."), (Role.ASSISTANT, "Lovely."))
    made = [
        memory_propose(conversation_id=conversation.pk, reply_id=reply.pk, tool_call_id=f"c{i}", text=text,
                       reason="It keeps coming up.").proposal
        for i, text in enumerate(FACTS)
    ]
    return conversation, user, made


@SIZES
def test_suggestions_list_approves_dismisses_clears_and_links_to_the_source(live_app, page: Page, viewport):
    page.set_viewport_size(viewport)
    conversation, user, (bees, cat, tea) = seeded_proposals()
    page.goto(f"{live_app.url}/memories/")
    page.locator("[data-suggestions-link]").click()
    page.wait_for_url(f"{live_app.url}/memories/suggestions/")
    pending = page.locator("[data-suggestions-pending]")
    expect(pending.locator("[data-proposal-card]")).to_have_count(3)

    card_of(page, FACTS[0]).get_by_role("button", name="Approve").click()
    expect(card_of(page, FACTS[0])).to_have_attribute("data-proposal-status", "approved")
    card_of(page, FACTS[2]).get_by_role("button", name="Dismiss").click()
    expect(card_of(page, FACTS[2])).to_have_attribute("data-proposal-status", "dismissed")

    page.reload()
    expect(pending.locator("[data-proposal-card]")).to_have_count(1)
    expect(page.locator("[data-suggestions-dismissed] [data-proposal-card]")).to_have_count(1)
    page.get_by_role("button", name="Clear dismissed").click()
    expect(page.locator("[data-suggestions-dismissed]")).to_have_count(0)
    assert not MemoryProposal.objects.filter(pk=tea.pk).exists()

    card_of(page, FACTS[1]).locator("[data-proposal-source]").click()
    page.wait_for_url(re.compile(rf"/c/{conversation.pk}/\?around={user.pk}"))
    expect(page.locator(f"#message-{user.pk}")).to_contain_text("The hives are humming.")
    assert page.js_errors == []


@SIZES
def test_a_memorys_history_and_source_and_the_chats_memories_view(live_app, page: Page, viewport):
    page.set_viewport_size(viewport)
    conversation, user, (bees, _, _) = seeded_proposals()
    memory = proposal_approve(proposal_id=bees.pk)
    memory_edit(memory_id=memory.pk, changes={"text": "AUMA keeps three hives on the hill."})
    memory_add(text="A later memory.")
    holder = conversation_create(title="Holder")  # holds both
    page.goto(f"{live_app.url}/memories/{memory.pk}/")
    expect(page.locator("[data-memory-text]")).to_have_text("AUMA keeps three hives on the hill.")
    expect(page.locator("[data-memory-history] [data-memory-version]")).to_have_count(1)
    expect(page.locator("[data-memory-history]")).to_contain_text(FACTS[0])
    expect(page.locator("[data-memory-held-by]")).to_have_text("Held by 1 chat")
    page.locator("[data-memory-source-link]").click()
    page.wait_for_url(re.compile(rf"/c/{conversation.pk}/\?around={user.pk}"))

    page.goto(f"{live_app.url}/c/{holder.pk}/")
    page.locator("[data-conversation-menu] summary").click()
    page.locator("[data-chat-memories-link]").click()
    page.wait_for_url(f"{live_app.url}/memories/in/{holder.pk}/")
    items = page.locator("[data-chat-memory-list] [data-memory-id]")
    expect(items).to_have_count(2)
    expect(items.first).to_contain_text("AUMA keeps three hives on the hill.")
    assert "newer" not in page.locator("[data-chat-memories]").inner_text().lower()

    memory_add(text="Added after the chat was opened.")
    page.reload()
    expect(items).to_have_count(2)  # a new memory joins only by Refresh memory
    page.get_by_role("button", name="Refresh memory").click()
    expect(items).to_have_count(3)
    expect(items.last).to_contain_text("Added after the chat was opened.")
    assert page.js_errors == []


SCHEMES = [(DESKTOP, "light"), (PHONE, "light"), (DESKTOP, "dark")]


@pytest.mark.parametrize(("viewport", "scheme"), SCHEMES, ids=["desktop-light", "phone-light", "desktop-dark"])
def test_the_waiting_count_follows_each_answer_and_dismissed_cards_pass_axe(live_app, page: Page, viewport, scheme):
    """Issue 41, item 7: "Waiting for you (N)" changes with each Approve and Dismiss, without a reload; a
    dismissed card (in the list it was answered in, and under "Dismissed") keeps its text at AA contrast."""
    from tests.support.axe import axe_violations, violation_lines

    page.set_viewport_size(viewport)
    page.emulate_media(color_scheme=scheme)
    seeded_proposals()
    elsewhere = conversation_create(title="Reading")
    _, reply = turns_append(elsewhere, (Role.USER, "Sunday again."), (Role.ASSISTANT, "A book day."))
    extra = memory_propose(conversation_id=elsewhere.pk, reply_id=reply.pk, tool_call_id="c9",
                           text="AUMA reads on Sundays.")
    proposal_dismiss(proposal_id=extra.proposal.pk)
    page.goto(f"{live_app.url}/memories/suggestions/")
    count = page.locator("[data-suggestions-waiting-count]")
    expect(page.get_by_role("heading", name="Waiting for you (3)")).to_be_visible()
    found = violation_lines("suggestions with a dismissed card", axe_violations(page))

    card_of(page, FACTS[0]).get_by_role("button", name="Approve").click()
    expect(count).to_have_text("2")
    card_of(page, FACTS[2]).get_by_role("button", name="Dismiss").click()
    expect(count).to_have_text("1")
    expect(page.locator("[data-suggestions-empty]")).to_be_hidden()
    found += violation_lines("suggestions after Dismiss", axe_violations(page))
    card_of(page, FACTS[1]).get_by_role("button", name="Dismiss").click()
    expect(count).to_have_text("0")
    expect(page.locator("[data-suggestions-empty]")).to_be_visible()
    assert found == [], "\n".join(found)

    page.reload()  # the server counts the same
    expect(page.get_by_role("heading", name="Waiting for you (0)")).to_be_visible()
    expect(page.locator("[data-suggestions-dismissed] [data-proposal-card]")).to_have_count(3)
    assert page.js_errors == []
