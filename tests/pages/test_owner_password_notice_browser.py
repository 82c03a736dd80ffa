"""Continuity Cleanup on a default install (issue 41, item 3): the seed allows it only under owner password
protection, so the 403 stays, but the page says how to turn protection on, and the sidebar's Admin link says that
its Cleanup needs it. Under protection neither shows. Desktop and phone; no serious axe violation."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.pages.conftest import OWNER_PASSWORD
from tests.support.axe import axe_violations, violation_lines

pytestmark = pytest.mark.browser

SIZES = {"desktop": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}


def open_sidebar(page: Page) -> None:
    if page.locator("[data-sidebar-open]").is_visible():
        page.locator("[data-sidebar-open]").click()


@pytest.mark.parametrize("size", SIZES)
def test_without_protection_the_cleanup_page_says_how_and_the_admin_link_says_it_needs_it(live_app, page: Page, size):
    page.set_viewport_size(SIZES[size])
    response = page.goto(f"{live_app.url}/admin/tools/continuity-cleanup/")
    assert response.status == 403
    expect(page.get_by_test_id("cleanup-unavailable")).to_contain_text("needs owner password protection")
    how = page.get_by_test_id("cleanup-how-to-protect")
    expect(how).to_be_visible()
    expect(how).to_contain_text("ELION_OWNER_PASSWORD='choose a password' make run")
    expect(how).to_contain_text("Log in with that password")
    expect(page.get_by_test_id("cleanup-form")).to_have_count(0)
    found = violation_lines(f"cleanup without protection ({size})", axe_violations(page))

    page.goto(f"{live_app.url}/settings/")
    open_sidebar(page)
    admin = page.locator("[data-admin-link]")
    expect(admin).to_be_visible()
    note = page.locator("[data-admin-needs-password]")
    expect(note).to_be_visible()
    expect(note).to_contain_text("Continuity Cleanup needs an owner password")
    # Read out with the link, and never clipped.
    assert admin.get_attribute("aria-describedby") == note.get_attribute("id")
    assert note.evaluate("el => el.scrollWidth <= el.clientWidth && el.scrollHeight <= el.clientHeight + 1")
    found += violation_lines(f"sidebar without protection ({size})", axe_violations(page))
    assert found == [], "\n".join(found)
    assert not page.js_errors


@pytest.mark.parametrize("size", SIZES)
def test_with_protection_there_is_no_such_note_and_the_breadcrumbs_pass_axe(offline_protected_app, page: Page, size):
    """Item 11: the breadcrumbs' links differ from their text by colour alone no more (link-in-text-block)."""
    page.set_viewport_size(SIZES[size])
    app = offline_protected_app.url
    page.goto(f"{app}/admin/tools/continuity-cleanup/")
    page.wait_for_url(re.compile(r"/login/"))
    page.fill("#password", OWNER_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.goto(f"{app}/admin/tools/continuity-cleanup/")
    expect(page.get_by_test_id("cleanup-preview")).to_be_visible()
    expect(page.get_by_test_id("cleanup-how-to-protect")).to_have_count(0)
    found = violation_lines(f"cleanup ({size})", axe_violations(page))
    page.goto(f"{app}/admin/tools/prompt-reconciliation/")
    found += violation_lines(f"prompt reconciliation ({size})", axe_violations(page))
    assert found == [], "\n".join(found)
    page.goto(f"{app}/settings/")
    open_sidebar(page)
    expect(page.locator(".sidebar-foot").get_by_role("link", name="Admin")).to_be_visible()
    expect(page.locator("[data-admin-needs-password]")).to_have_count(0)
