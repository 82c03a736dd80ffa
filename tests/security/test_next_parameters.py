"""Every `next` parameter leads to a path on this site, whatever it holds (issue 41, item 14).

`redirect("-1")` once read a `next` as a URL name (NoReverseMatch, a 500) and `next=logout` sent the
browser to /logout/. Now every reader of `next` goes through `elion.base.local_redirect.redirect_local`:
checked in the source (a new reader that bypasses it fails the first test), then by behaviour on every
page route the resolver knows, GET and POST, with each hostile value, and on the login page itself.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import pytest
from django.test import Client

from tests.support.routes import ROUTES
from tests.support.send_trace import contract_layers

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
# Every package of the project (`.importlinter`'s root_packages), so a new app is read too.
PACKAGES, _ = contract_layers(ROOT)
HOSTILE = (
    "-1", "logout", "memory-suggestions", "//evil.example/", "https://evil.example/", "http:evil.example",
    "javascript:alert(1)", "/\\evil.example", "\\\\evil.example", "/ok\x00", "\x00", "/\r\nSet-Cookie:x=1",
)
READS_NEXT = re.compile(r"""(GET|POST|data|query_params)(\.get\(|\[)\s*["']next["']""")


def _is_local(location: str) -> bool:
    parts = urlsplit(location)
    return location.startswith("/") and not location.startswith(("//", "/\\")) and not parts.scheme \
        and not parts.netloc and "\x00" not in location


def test_every_reader_of_next_goes_through_the_one_check():
    readers = []
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            text = path.read_text()
            if READS_NEXT.search(text):
                readers.append(path.relative_to(ROOT).as_posix())
                assert "redirect_local" in text, f"{path}: reads `next` without elion.base.local_redirect"
    # The readers known today (the proposal cards of memories and check-ins read it in one place): the scan found them.
    assert {"conversations/web/redirects.py", "elion/web/proposal_cards.py", "elion/web/access/pages.py"} <= set(readers)
    assert "check_ins" in PACKAGES


def test_no_page_route_follows_a_hostile_next():
    client = Client()
    tried = 0
    for route, path in ROUTES:
        if path.startswith(("/api/", "/admin/", "/static/")):
            continue
        for value in HOSTILE:
            for response in (client.get(path, {"next": value}), client.post(path, {"next": value})):
                tried += 1
                assert response.status_code < 500, (route, value, response.status_code)
                if 300 <= response.status_code < 400:
                    assert _is_local(response["Location"]), (route, value, response["Location"])
    assert tried > 500


@pytest.mark.parametrize("value", HOSTILE)
def test_a_suggestion_action_with_a_hostile_next_lands_on_suggestions(value):
    # An unknown action (or proposal) goes back to `next` at once, as a refused approve does.
    response = Client().post("/memories/suggestions/1/bogus/", {"next": value})
    if "\x00" in value:
        assert response.status_code == 400  # the input checks refuse a NUL before any view
        return
    assert response.status_code == 302
    assert response["Location"] == "/memories/suggestions/"


@pytest.mark.parametrize("value", ["/c/1/", "/memories/suggestions/?x=1"])
def test_a_local_next_is_followed(value):
    response = Client().post("/memories/suggestions/999999/dismiss/", {"next": value})
    assert response.status_code == 302
    assert response["Location"] == value


@pytest.mark.parametrize("value", HOSTILE)
def test_login_with_a_hostile_next_lands_home(settings, value):
    settings.ELION_OWNER_PASSWORD = "correct horse"
    settings.ELION_PROTECTED = True
    response = Client().post("/login/?" + urlencode({"next": value}), {"password": "correct horse"})
    if "\x00" in value:
        assert response.status_code == 400  # the input checks refuse a NUL before any view
        return
    assert response.status_code == 302
    assert response["Location"] == "/"


def test_login_follows_a_local_next(settings):
    settings.ELION_OWNER_PASSWORD = "correct horse"
    settings.ELION_PROTECTED = True
    response = Client().post("/login/?next=/settings/", {"password": "correct horse"})
    assert response["Location"] == "/settings/"
