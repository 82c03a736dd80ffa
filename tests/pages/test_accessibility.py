"""Accessibility (issue 19, "Accessibility"): axe-core finds no serious or critical violation on any page,
at desktop and at phone size.

axe-core is vendored (tests/support/vendor/axe-core/, used by this test only, never served) and
evaluated into each page through the DevTools protocol, so the pages'
Content-Security-Policy stays as it is. To check a new page, add one line to
`PAGES`: a name and a function from the seeded rows to its path. A failure
lists every violation: page, size, rule id, impact, the elements it found
and axe's help text.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import httpx
import pytest
from django.contrib.messages.constants import DEFAULT_LEVELS
from django.test import Client
from django.utils import timezone
from playwright.sync_api import Page, expect

from archive.services.documents import archive_document_add_text
from archive.services.library import library_file_add_text
from artifacts import services as artifact_services
from check_ins.services.check_ins import check_in_create
from check_ins.services.proposals import check_in_propose
from conversations.services.characters import character_create
from conversations.services.settings_writes import assistant_settings_update
from conversations.services.threads.thread_writes import conversation_create
from memories.models import Memory
from memories.services.memory_writes import memory_add
from memories.services.proposals import memory_propose, proposal_dismiss
from tests.support.axe import axe_violations, violation_lines
from tests.support.factories import turns_append
from tests.support.scripted_provider import ScriptedImageCall, ScriptedReply
from transcript.models import Conversation, Folder, Message

pytestmark = pytest.mark.browser

VIEWPORTS = {"desktop": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}
# (viewport, colour scheme) runs: contrast differs between the light and the dark palette.
RUNS = [("desktop", "light"), ("phone", "light"), ("desktop", "dark")]
REPLY = (
    "Here is the plan:\n\n## Morning\n\n- walk to the **harbour**\n- [tide table](https://example.com/tides)\n\n"
    "```python\nprint('tide')\n```\n\n| when | what |\n|---|---|\n| 7:00 | boats |\n\n> keep it light"
)


@dataclass
class Seeded:
    chat: Conversation
    empty_chat: Conversation
    memory: Memory
    document_id: int
    library_file_id: int
    artifact_id: str
    trashed: Conversation
    quarantined: Conversation
    shielded: Conversation
    character_id: int
    image_chat: str
    branch_chat: str
    new_chat: Conversation
    check_in_id: int


def image_reply_chat(scripted_server, base_url: str) -> str:
    """A chat whose reply made an image (sent to the live server, answered by the scripted provider): its
    figure, caption and Download link, and the provider usage the Usage page tabulates."""
    assistant_settings_update(image_generation=True)
    scripted_server.script(ScriptedReply(images=[ScriptedImageCall(partials=0)], text="Here is the harbour."))
    chat_id = str(conversation_create(persona="elion", title="Pictures").id)
    sent = httpx.post(f"{base_url}/api/conversations/{chat_id}/messages/?stream=false",
                      json={"content": "Draw the harbour."}, timeout=60)
    assert sent.status_code == 200, sent.text[:500]
    return chat_id


def seed(scripted_server, base_url: str) -> Seeded:
    """One of everything a page can show: a chat with Markdown, an empty chat, a hidden folder, the trash…"""
    chat = conversation_create(persona="elion", title="Harbour plans")
    turns_append(chat, ("user", "What shall we do at the harbour tomorrow?"), ("assistant", REPLY))
    turns_append(chat, ("user", "And the heron?"), ("assistant", "The heron waits at dawn."))
    empty_chat = conversation_create(persona="clipboard")
    folder = Folder.objects.create(name="Letters")
    conversation_create(persona="elion", title="A filed letter", folder_id=folder.pk)
    vault = Folder.objects.create(name="Vault", hidden=True)
    quarantined = conversation_create(persona="elion", title="Quarantined", folder_id=vault.pk)
    turns_append(quarantined, ("user", "the heron in the vault"), ("assistant", "kept"))
    shielded = conversation_create(persona="elion", title="Shielded")
    turns_append(shielded, ("user", "a shielded heron"), ("assistant", "yes"))
    Conversation.objects.filter(pk=shielded.pk).update(shielded=True, updated_at=timezone.now())
    trashed = conversation_create(persona="elion", title="Thrown away")
    turns_append(trashed, ("user", "old heron"), ("assistant", "gone"))
    Conversation.objects.filter(pk=trashed.pk).update(trashed=True, updated_at=timezone.now())
    memory = memory_add(text="AUMA loves the harbour at dawn.", category="place", importance=4)
    character = character_create(name="Captain Wren", description="A weathered harbour pilot.")
    document = archive_document_add_text(
        text="AUMA said:\nDo you remember the heron?\n\nVoicefire 5.1 said:\nBy the reeds, at dawn.",
        collection="conversations", title="Heron talk",
    ).document
    library_file = library_file_add_text(name="tides.md", text="# Tides\n\nHigh water at seven.").file
    reply = Message.objects.filter(conversation=chat, role="assistant").order_by("seq").first()
    artifact = artifact_services.artifact_create(
        title="Harbour poem", kind="poem", content="# Harbour\n\nBoats come home.",
        provenance=artifact_services.Provenance(conversation_id=chat.id, message_id=reply.id, tool_call_id="call_1"),
    ).artifact
    for number in range(26):  # more than one page of the archive list
        archive_document_add_text(text=f"Paper number {number}.", collection="papers", title=f"Paper {number}")
    for number, text in enumerate(("AUMA keeps bees.", "AUMA's cat is Juniper.")):  # one waiting, one dismissed
        suggested = memory_propose(conversation_id=chat.id, reply_id=reply.id, tool_call_id=f"c{number}", text=text)
    proposal_dismiss(proposal_id=suggested.proposal.pk)
    check_in_id = seed_check_ins(chat, reply)
    image_chat = image_reply_chat(scripted_server, base_url)
    branch_chat = Client().post(f"/api/conversations/{chat.id}/branch/", headers={"Idempotency-Key": "axe"}).json()["id"]
    new_chat = conversation_create(persona="elion")  # carries the latest chat's handoff: its notice shows
    return Seeded(chat, empty_chat, memory, document.pk, library_file.pk, str(artifact.pk), trashed, quarantined,
                  shielded, character.pk, image_chat, branch_chat, new_chat, check_in_id)


def seed_check_ins(chat: Conversation, reply: Message) -> int:
    """A check-in writing in `chat`, one Elion proposed under `reply` (its card), an unread chat (issue 44)."""
    check_in = check_in_create(title="Harbour walk", brief="Ask whether I walked to the harbour.",
                               schedule={"kind": "weekdays", "at": "07:30", "days": ["sat", "sun"]},
                               target={"kind": "conversation", "conversation_id": str(chat.pk)},
                               quiet_hours={"start": "22:00", "end": "07:00"})
    reply.parts = [*(reply.parts or []), {"type": "tool_call", "call_id": "k1", "name": "propose_check_in",
                                          "arguments": "{}", "round": 1}]
    reply.save(update_fields=["parts"])
    check_in_propose(conversation_id=chat.pk, reply_id=reply.pk, tool_call_id="k1", title="Heron count",
                     brief="Ask how many herons I saw.", schedule={"kind": "daily", "at": "19:00"})
    Conversation.objects.filter(title="A filed letter").update(unread=True)  # never opened here: its dot shows
    return check_in.pk


# Every page of the app, by name. Add a line here for a new page.
PAGES: list[tuple[str, Callable[[Seeded], str]]] = [
    ("chat with messages", lambda s: f"/c/{s.chat.id}/"),
    ("chat with a generated image", lambda s: f"/c/{s.image_chat}/"),
    ("branch chat", lambda s: f"/c/{s.branch_chat}/"),
    ("new chat with its handoff notice", lambda s: f"/c/{s.new_chat.id}/"),
    ("new chat choice", lambda s: "/c/new/"),
    ("empty chat", lambda s: f"/c/{s.empty_chat.id}/"),
    ("trashed chat", lambda s: f"/c/{s.trashed.id}/"),
    ("chat in a hidden folder", lambda s: f"/c/{s.quarantined.id}/"),
    ("shielded chat", lambda s: f"/c/{s.shielded.id}/"),
    ("settings", lambda s: "/settings/"),
    ("check-ins, one suggested", lambda s: "/settings/check-ins/"),
    ("check-in new, from a chat", lambda s: f"/settings/check-ins/new/?conversation={s.chat.id}"),
    ("check-in new, from a shielded chat", lambda s: f"/settings/check-ins/new/?conversation={s.shielded.id}"),
    ("check-in edit", lambda s: f"/settings/check-ins/{s.check_in_id}/"),
    ("usage", lambda s: "/settings/usage/"),
    ("search with results", lambda s: f"/search/?q=heron&from={s.chat.id}"),
    ("memories", lambda s: "/memories/"),
    ("memory edit", lambda s: f"/memories/{s.memory.pk}/edit/"),
    ("memory delete", lambda s: f"/memories/{s.memory.pk}/delete/"),
    ("memories import", lambda s: "/memories/import/"),
    ("memory suggestions, one dismissed", lambda s: "/memories/suggestions/"),
    ("characters", lambda s: "/characters/"),
    ("character edit", lambda s: f"/characters/{s.character_id}/edit/"),
    ("archive list", lambda s: "/archive/"),
    ("archive list page 2", lambda s: "/archive/?page=2"),
    ("archive search", lambda s: "/archive/?q=heron"),
    ("archive document", lambda s: f"/archive/{s.document_id}/?q=heron"),
    ("library", lambda s: "/library/"),
    ("library file", lambda s: f"/library/{s.library_file_id}/"),
    ("artifacts", lambda s: "/artifacts/"),
    ("artifact", lambda s: f"/artifacts/{s.artifact_id}/"),
    ("hidden folders", lambda s: "/folders/hidden/"),
    ("trash", lambda s: "/trash/"),
    ("login", lambda s: "/login/"),
    ("admin Continuity Cleanup (no owner password)", lambda s: "/admin/tools/continuity-cleanup/"),
    ("not found", lambda s: "/no-such-page/"),
]

# Pages in an opened state: (name, path, what to open). Axe checks only what is rendered, so menus count here.
def in_sidebar(selector: str) -> Callable[[Page], None]:
    """Click something in the sidebar, opening the drawer first at phone size."""
    def open_it(page: Page) -> None:
        if page.locator("[data-sidebar-open]").is_visible():
            page.locator("[data-sidebar-open]").click()
        page.locator(selector).first.click()

    return open_it


OPENED: list[tuple[str, Callable[[Seeded], str], Callable[[Page], None]]] = [
    ("folder menu open", lambda s: f"/c/{s.chat.id}/", in_sidebar(".sidebar .folder-menu summary")),
    ("new folder open", lambda s: "/settings/", in_sidebar(".new-folder summary")),
]
# Opened states that exist at phone size only.
OPENED_ON_PHONE: list[tuple[str, Callable[[Seeded], str], Callable[[Page], None]]] = [
    ("sidebar drawer open", lambda s: f"/c/{s.chat.id}/", lambda page: page.locator("[data-sidebar-open]").click()),
]


@pytest.mark.parametrize(("size", "scheme"), RUNS, ids=[f"{size}-{scheme}" for size, scheme in RUNS])
def test_no_page_has_a_serious_or_critical_axe_violation(live_app, page: Page, scripted_server, size, scheme):
    seeded = seed(scripted_server, live_app.url)
    page.set_viewport_size(VIEWPORTS[size])
    page.emulate_media(color_scheme=scheme)
    found: list[str] = []
    for name, path_of in PAGES:
        response = page.goto(f"{live_app.url}{path_of(seeded)}")
        assert response is not None and response.status < 500, f"{name}: {response and response.status}"
        page.wait_for_load_state("load")
        # What a screen reader reads: no template comment or tag may leak into the text.
        text = page.locator("body").inner_text()
        found += [f"{name}: template syntax in the page text" for mark in ("{#", "{%") if mark in text]
        found += violation_lines(f"{name} ({size}, {scheme}, {path_of(seeded)})", axe_violations(page))
    for name, path_of, open_it in OPENED + (OPENED_ON_PHONE if size == "phone" else []):
        page.goto(f"{live_app.url}{path_of(seeded)}")
        open_it(page)
        page.wait_for_timeout(300)  # let a drawer or menu finish opening
        found += violation_lines(f"{name} ({size}, {scheme}, {path_of(seeded)})", axe_violations(page))
    assert not page.js_errors, page.js_errors
    assert found == [], "axe-core found serious or critical violations:\n" + "\n".join(found)


def test_a_streaming_reply_is_announced_politely_and_passes_axe(live_app, page: Page, scripted_server):
    answer, more = threading.Event(), threading.Event()
    scripted_server.script(
        ScriptedReply(chunks=["The tide ", "turns ", "at seven."], hold_before_response=answer, hold=more)
    )
    chat = conversation_create(persona="elion", title="Tides")
    turns_append(chat, ("user", "hello"), ("assistant", "hi"))
    try:
        page.goto(f"{live_app.url}/c/{chat.id}/")
        page.locator("[data-composer-input]").fill("When does the tide turn?")
        page.locator("[data-composer-input]").press("Enter")
        live = page.locator(".message-assistant.status-streaming")
        # Waiting for the first words (the typing indicator), then part of the reply.
        expect(live).to_be_visible()
        waiting = violation_lines("chat waiting for a reply", axe_violations(page))
        answer.set()
        expect(live).to_contain_text("The tide")
        # The streaming text sits inside a polite live region (never an assertive one).
        politeness = live.evaluate("el => el.closest('[aria-live]')?.getAttribute('aria-live') ?? null")
        assert politeness == "polite"
        streaming = violation_lines("chat while streaming", axe_violations(page))
        assert waiting + streaming == []
    finally:
        answer.set()
        more.set()
    expect(page.locator(".message-assistant.status-streaming")).to_have_count(0)
    assert not page.js_errors


def test_flash_messages_of_every_level_pass_axe(live_app, page: Page):
    """Every level Django's messages framework has, rendered by the one flash template, on an owner page."""
    from django.contrib.messages.storage.base import Message as FlashMessage
    from django.template.loader import render_to_string

    flashes = [FlashMessage(level, f"A {tag} message.") for tag, level in DEFAULT_LEVELS.items()]
    html = render_to_string("_flash_messages.html", {"messages": flashes})
    page.goto(f"{live_app.url}/settings/")
    page.evaluate("html => document.querySelector('main').insertAdjacentHTML('afterbegin', html)", html)
    assert page.locator("[data-flash]").count() == len(DEFAULT_LEVELS)
    assert violation_lines("settings with a flash of every level", axe_violations(page)) == []


def test_the_axe_check_can_fail(live_app, page: Page):
    """The check sees a real violation: a button with no name, added to a page."""
    page.goto(f"{live_app.url}/settings/")
    page.evaluate("() => document.querySelector('main').append(Object.assign(document.createElement('button')))")
    ids = {v["id"] for v in axe_violations(page)}
    assert "button-name" in ids


FOCUS_PAGES: list[tuple[str, Callable[[Seeded], str]]] = [
    ("chat with messages", lambda s: f"/c/{s.chat.id}/"),
    ("new chat with its handoff notice", lambda s: f"/c/{s.new_chat.id}/"),
    ("usage", lambda s: "/settings/usage/"),
    ("settings", lambda s: "/settings/"),
    ("archive list", lambda s: "/archive/"),
    ("archive list page 2", lambda s: "/archive/?page=2"),
    ("memories", lambda s: "/memories/"),
    ("search with results", lambda s: f"/search/?q=heron&from={s.chat.id}"),
]
# For every visible control: is something drawn differently when it has keyboard focus? The control itself,
# its label or wrapper (a ring drawn with :focus-within) or the element right after it (a styled radio's text).
UNFOCUSED_CONTROLS = """() => {
  const selector = 'a[href], button:not([disabled]), input:not([disabled]):not([type=hidden]), select:not([disabled]),'
    + ' textarea:not([disabled]), summary, [tabindex]:not([tabindex="-1"])';
  const looks = (el) => [el, el.parentElement, el.parentElement?.parentElement, el.nextElementSibling]
    .filter(Boolean)
    .map((node) => { const s = getComputedStyle(node);
      return [s.outlineStyle, s.outlineWidth, s.outlineColor, s.boxShadow, s.borderColor, s.backgroundColor,
              s.textDecorationLine].join('|'); })
    .join('/');
  const missing = [];
  for (const el of document.querySelectorAll(selector)) {
    const box = el.getBoundingClientRect();
    const shown = el.getClientRects().length && getComputedStyle(el).visibility !== 'hidden';
    const labelled = el.closest('label');
    if (!shown || (box.width < 2 && box.height < 2 && !labelled)) continue;
    el.blur();
    const before = looks(el);
    el.focus({ preventScroll: true });
    if (document.activeElement !== el) continue;
    const after = looks(el);
    el.blur();
    if (before === after) missing.push(el.outerHTML.slice(0, 160));
  }
  return missing;
}"""


def test_every_control_shows_where_keyboard_focus_is(live_app, page: Page, scripted_server):
    seeded = seed(scripted_server, live_app.url)
    found: list[str] = []
    for name, path_of in FOCUS_PAGES:
        page.goto(f"{live_app.url}{path_of(seeded)}")
        page.keyboard.press("Tab")  # keyboard modality, so :focus-visible applies to programmatic focus
        found += [f"{name}: {html}" for html in page.evaluate(UNFOCUSED_CONTROLS)]
    assert found == [], "controls with no visible focus:\n" + "\n".join(found)


def test_the_focus_check_can_fail(live_app, page: Page):
    """A control whose focus ring is taken away is reported."""
    page.goto(f"{live_app.url}/settings/")
    page.keyboard.press("Tab")
    page.evaluate(
        "() => { const b = document.createElement('button'); b.textContent = 'Bare'; b.className = 'bare';"
        " b.style.cssText = 'outline: none !important; box-shadow: none !important';"
        " document.querySelector('main').append(b); }"
    )
    assert any('class="bare"' in html for html in page.evaluate(UNFOCUSED_CONTROLS))
