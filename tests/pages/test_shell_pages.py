"""The shell without a browser: sidebar date headings, doors, export links, the provider banner's
words, the styled 404 and 500, the manifest and the favicon."""

from __future__ import annotations

import json
import struct
from dataclasses import replace
from datetime import date, timedelta
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.template.loader import get_template
from django.test import RequestFactory
from django.utils import timezone

from conversations.web.page_selectors import activity_group_name, provider_change_for, sidebar_groups
from elion.base.api_errors import server_error
from transcript.models import Conversation
from transcript.provider.binding import configured_provider

pytestmark = pytest.mark.django_db

STATIC = Path(django_settings.BASE_DIR) / "static"


@pytest.fixture
def keyed(settings):
    settings.OPENAI_API_KEY = "test-key"


def png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", header[16:24])


@pytest.mark.parametrize(
    ("day", "name"),
    [
        (date(2026, 12, 10), "Today"),
        (date(2026, 12, 9), "Yesterday"),
        (date(2026, 12, 8), "Previous 7 days"),
        (date(2026, 12, 3), "Previous 7 days"),
        (date(2026, 12, 2), "December"),
        (date(2026, 11, 30), "November"),
        (date(2025, 12, 31), "December 2025"),
    ],
)
def test_a_conversation_is_filed_under_its_last_activity(day, name):
    assert activity_group_name(day, today=date(2026, 12, 10)) == name


def test_sidebar_lists_unfiled_chats_under_date_headings_and_folders_after(make_conversation):
    from conversations.services.threads.thread_writes import folder_create

    work = folder_create(name="Work")
    ages = {"now": timedelta(0), "yesterday": timedelta(days=1), "three days": timedelta(days=3),
            "forty days": timedelta(days=40)}
    now = timezone.now()
    for title, age in ages.items():
        conversation = make_conversation(title=title)
        Conversation.objects.filter(pk=conversation.pk).update(updated_at=now - age)
    filed = make_conversation(title="filed", folder_id=work.id)
    Conversation.objects.filter(pk=filed.pk).update(updated_at=now)

    groups = [(g.name, [c.title for c in g.conversations]) for g in sidebar_groups()]
    old_day = timezone.localdate(now - ages["forty days"])
    assert groups == [
        ("Today", ["now"]),
        ("Yesterday", ["yesterday"]),
        ("Previous 7 days", ["three days"]),
        (activity_group_name(old_day, timezone.localdate(now)), ["forty days"]),
        ("Work", ["filed"]),
    ]
    assert groups[3][0] not in ("Today", "Yesterday", "Previous 7 days")


def test_every_door_is_in_the_sidebar(client, make_conversation, keyed):
    conversation = make_conversation(title="Doors")
    html = client.get(f"/c/{conversation.id}/").content.decode()
    doors = html[html.index('<nav class="sidebar-foot"'):]
    doors = doors[: doors.index("</nav>")]
    for name, href in (("Archive", "/archive/"), ("Library", "/library/"), ("Memories", "/memories/"),
                       ("Characters", "/characters/"), ("Artifacts", "/artifacts/"), ("Usage", "/settings/usage/"),
                       ("Settings", "/settings/")):
        assert f'<a href="{href}">{name}</a>' in doors
    assert 'href="/search/?from=' in html
    assert 'id="sidebar-filter"' in html and '<label for="sidebar-filter"' in html


def test_chat_menu_exports_through_the_api_endpoints(client, make_conversation, make_turns, keyed):
    conversation = make_conversation(title="Exported")
    make_turns(conversation, ("user", "hello"), ("assistant", "hi"))
    html = client.get(f"/c/{conversation.id}/").content.decode()
    for fmt, extension in (("markdown", "md"), ("json", "json")):
        href = f"/api/conversations/{conversation.id}/export/?format={fmt}"
        assert f'href="{href}"' in html
        assert f'download="conversation-{conversation.id}.{extension}"' in html
        assert client.get(href).status_code == 200


def test_provider_change_names_the_recorded_and_the_current_provider(make_conversation, make_turns, settings):
    settings.OPENAI_API_KEY = ""
    conversation = make_conversation()
    make_turns(conversation, ("user", "q"), ("assistant", "a"))  # held with the offline demo provider
    assert provider_change_for(conversation) is None
    settings.OPENAI_API_KEY = "a-key-now"
    change = provider_change_for(conversation)
    assert change.code == "provider_mismatch"
    assert change.held_with == "the offline demo provider"
    assert change.continue_with == f"{settings.ELION_MODEL} ({settings.ELION_PROVIDER_ID})"


def test_provider_change_on_the_same_model_at_another_route_says_so(make_conversation, make_turns, settings):
    settings.OPENAI_API_KEY = "a-key"
    conversation = make_conversation()
    other_route = replace(configured_provider(), base_url="http://127.0.0.1:9/v1").binding()
    make_turns(conversation, ("user", "q"), ("assistant", "a"), binding=other_route.__dict__)
    change = provider_change_for(conversation)
    assert change.held_with == f"{change.continue_with} at another address"


def test_provider_banner_on_the_chat_page_is_plain_words_and_one_button(client, make_conversation, make_turns,
                                                                        settings):
    settings.OPENAI_API_KEY = ""
    conversation = make_conversation()
    make_turns(conversation, ("user", "q"), ("assistant", "a"))
    settings.OPENAI_API_KEY = "a-key-now"
    html = client.get(f"/c/{conversation.id}/").content.decode()
    banner = html[html.index('data-binding-problem="provider_mismatch"'):]
    banner = banner[: banner.index("</div>")]
    assert "This chat was held with the offline demo provider." in banner
    assert f"Continue it with {settings.ELION_MODEL} ({settings.ELION_PROVIDER_ID}):" in banner
    assert banner.count("data-branch-button") == 1
    assert "differs from" not in html and "route" not in banner


def test_an_unknown_page_is_the_styled_404_and_an_unknown_api_path_keeps_the_json_shape(client, keyed):
    page = client.get("/no-such-page/")
    assert page.status_code == 404
    assert page["Content-Type"].startswith("text/html")
    html = page.content.decode()
    assert 'data-error-page="404"' in html and "There is nothing at this address" in html
    assert 'rel="manifest"' in html

    missing_chat = client.get("/c/00000000-0000-0000-0000-000000000000/")
    assert missing_chat.status_code == 404 and 'data-error-page="404"' in missing_chat.content.decode()

    api = client.get("/api/no-such-path/")
    assert api.status_code == 404
    assert api.json() == {"error": "not_found", "detail": "No such API path."}
    api_object = client.get("/api/conversations/00000000-0000-0000-0000-000000000000/")
    assert api_object.status_code == 404 and set(api_object.json()) == {"error", "detail"}


def test_the_500_page_is_styled_and_reads_no_database(django_assert_num_queries):
    with django_assert_num_queries(0):
        html = get_template("500.html").render()
        response = server_error(RequestFactory().get("/settings/"))
    assert 'data-error-page="500"' in html
    assert response.status_code == 500 and 'data-error-page="500"' in response.content.decode()
    api = server_error(RequestFactory().get("/api/settings/"))
    assert json.loads(api.content)["error"] == "internal_error"


def test_the_manifest_names_existing_icons_of_their_stated_sizes(client, keyed):
    html = client.get("/settings/").content.decode()
    assert '<link rel="manifest" href="/static/manifest.webmanifest">' in html
    assert '<meta name="theme-color" content="#5b4bd6">' in html
    served = client.get("/static/manifest.webmanifest")
    assert served.status_code == 200 and served["Content-Type"] == "application/manifest+json"
    manifest = json.loads(b"".join(served.streaming_content) if served.streaming else served.content)
    assert manifest["display"] == "standalone" and manifest["theme_color"] == "#5b4bd6"
    assert manifest["start_url"] == "/"
    sizes = set()
    for icon in manifest["icons"]:
        path = STATIC / icon["src"].removeprefix("/static/")
        assert path.exists(), icon["src"]
        if icon["type"] == "image/png":
            width, height = png_size(path)
            assert icon["sizes"] == f"{width}x{height}"
            sizes.add(width)
        else:
            assert icon["type"] == "image/svg+xml" and path.read_text().lstrip().startswith("<svg")
    assert {192, 512} <= sizes


def test_the_favicon_answers_with_the_app_icon(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 302  # the hashed name changes with the icon (issue 34)
    assert response["Location"] == "/static/icons/elion-32.png"
    assert png_size(STATIC / "icons" / "elion-32.png") == (32, 32)
