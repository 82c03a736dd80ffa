"""The chat header's origin badge at phone size (issue 41, item 6): "Branch", "Fork" and "Imported" were cut to
"Br" or "Ir" with no ellipsis at 390×844. Every origin, every persona, a long title and a short one, phone and
desktop: the badge shows its whole label (its text fits its box, its box sits in the header and the viewport) and
the title keeps a readable width, ending in an ellipsis when it is cut; nothing in the header runs past the
screen (beside an origin badge the persona tag gives way on a phone)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from conversations.services.threads.thread_writes import conversation_create
from transcript.models import ConversationOrigin, Persona

pytestmark = pytest.mark.browser

SIZES = {"phone": {"width": 390, "height": 844}, "narrow phone": {"width": 360, "height": 740},
         "desktop": {"width": 1366, "height": 900}}
TITLES = ("Rewind test one.", "A very long conversation title about the harbour, the heron and the tides at dawn")
ORIGINS = {ConversationOrigin.BRANCH: "Branch", ConversationOrigin.FORK: "Fork", ConversationOrigin.IMPORTED: "Imported"}

MEASURE = """() => {
  const badge = document.querySelector('[data-origin-badge]');
  const title = document.querySelector('[data-title-button]');
  const header = document.querySelector('[data-chat-header]');
  const b = badge.getBoundingClientRect(), h = header.getBoundingClientRect(), t = title.getBoundingClientRect();
  return {
    text: badge.innerText, fits: badge.scrollWidth <= badge.clientWidth,
    inside: b.left >= h.left - 0.5 && b.right <= h.right + 0.5 && b.right <= window.innerWidth,
    titleWidth: t.width, titleCut: title.scrollWidth > title.clientWidth,
    titleEllipsis: getComputedStyle(title).textOverflow,
    headerFits: [...header.children].every((el) => el.getBoundingClientRect().right <= window.innerWidth + 0.5),
  };
}"""


@pytest.mark.parametrize("size", SIZES)
def test_the_origin_badge_is_never_clipped(live_app, page: Page, size):
    page.set_viewport_size(SIZES[size])
    found = []
    for origin, label in ORIGINS.items():
        for persona in Persona.values:
            for title in TITLES:
                chat = conversation_create(persona=persona, title=title, origin=origin)
                page.goto(f"{live_app.url}/c/{chat.id}/")
                expect(page.locator("[data-origin-badge]")).to_be_visible()
                seen = page.evaluate(MEASURE)
                where = f"{label}, {persona}, {title[:20]!r} at {size}"
                if seen["text"] != label or not seen["fits"] or not seen["inside"]:
                    found.append(f"{where}: badge {seen}")
                if not seen["headerFits"]:
                    found.append(f"{where}: the header runs past the screen")
                if seen["titleWidth"] < 60:
                    found.append(f"{where}: title only {seen['titleWidth']:.0f} px wide")
                if seen["titleCut"] and seen["titleEllipsis"] != "ellipsis":
                    found.append(f"{where}: title cut with no ellipsis")
    assert found == [], "\n".join(found)
    assert not page.js_errors
