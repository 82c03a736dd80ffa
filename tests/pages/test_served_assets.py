"""Every file a page needs, as collectstatic serves it (issue 41, item 1: the Archive import script asked for
`import_job.<hash>.<hash>.js` and got a 404, so the import fell back to one plain upload).

The site is collected with the project's storage (`elion.base.static_storage`) and served by Daphne with an
owner password, seeded with one of everything a conditional script or stylesheet waits for (a chat with code in a
reply, a branch, a fork, an archived conversation that can be continued, an artifact, memory suggestions, a legacy
handoff for the admin's Continuity Cleanup). Logged in as the owner, the crawl follows every same-site link from
the home page and fetches every script, stylesheet, module preload, icon, ES-module import (static and dynamic)
and CSS `url()`: each must answer 200 and carry exactly one content hash. Then chromium opens every page found:
no request may fail and no console error may appear, and the Archive page's import forms must be driven by their
scripts."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from playwright.sync_api import Page, expect

from archive.services.documents import archive_document_add_text
from artifacts import services as artifact_services
from check_ins.services.check_ins import check_in_create
from check_ins.services.proposals import check_in_propose
from continuity.models import ThreadHandoff
from continuity.services.branching import conversation_branch
from conversations.services.characters import character_create
from conversations.services.threads.fork import conversation_fork
from conversations.services.threads.thread_writes import conversation_create
from memories.services.memory_writes import memory_add
from memories.services.proposals import memory_propose, proposal_dismiss
from tests.pages.conftest import OWNER_API_TOKEN, OWNER_PASSWORD, start_daphne, stop_daphne
from tests.support.factories import turns_append
from tests.support.served_static import collect_static, crawl, empty_static_root, hash_count, logged_in_client
from transcript.models import Conversation, Folder, Message

pytestmark = pytest.mark.slow

CODE_REPLY = "Try this:\n\n```python\nprint('tide')\n```\n\nand `inline` too."


@pytest.fixture(scope="module")
def collected_site(django_db_setup, django_db_blocker, tmp_path_factory):
    """Daphne serving what collectstatic wrote with the project's storage, owner password on."""
    root = settings.STATIC_ROOT
    collect_static(root)
    with django_db_blocker.unblock():
        app = start_daphne(
            "collected",
            {"ELION_STATIC_HASHED": "1", "ELION_OWNER_PASSWORD": OWNER_PASSWORD, "ELION_API_TOKEN": OWNER_API_TOKEN},
            tmp_path_factory.mktemp("daphne"),
        )
    yield app
    stop_daphne(app)
    empty_static_root(root)


def seed() -> list[str]:
    """One of everything a conditional script or stylesheet waits for; the pages no link reaches."""
    chat = conversation_create(persona="elion", title="Harbour plans")
    turns_append(chat, ("user", "What shall we do?"), ("assistant", CODE_REPLY))
    _, reply = turns_append(chat, ("user", "And the heron?"), ("assistant", "The heron waits at dawn."))
    conversation_branch(conversation_id=chat.id, idempotency_key="crawl-branch")
    conversation_fork(conversation_id=chat.id, message_id=str(reply.id), idempotency_key="crawl-fork")
    folder = Folder.objects.create(name="Letters")
    conversation_create(persona="elion", title="A filed letter", folder_id=folder.pk)
    memory_add(text="AUMA loves the harbour at dawn.", category="place", importance=4)
    for number, text in enumerate(("AUMA keeps bees.", "AUMA's cat is Juniper.")):
        proposal = memory_propose(conversation_id=chat.id, reply_id=reply.id, tool_call_id=f"c{number}", text=text)
    proposal_dismiss(proposal_id=proposal.proposal.pk)
    check_in_create(title="Heron watch", brief="Ask about the heron.", schedule={"kind": "daily", "at": "07:00"},
                    target={"kind": "conversation", "conversation_id": str(chat.id)})
    reply.parts = [{"type": "tool_call", "call_id": "k1", "name": "propose_check_in", "arguments": "{}", "round": 1}]
    reply.save(update_fields=["parts"])
    check_in_propose(conversation_id=chat.id, reply_id=reply.id, tool_call_id="k1", title="Tide check",
                     brief="Ask about the tide.", schedule={"kind": "daily", "at": "18:00"})
    character_create(name="Captain Wren", description="A weathered harbour pilot.")
    document = archive_document_add_text(
        text="AUMA said:\nDo you remember the heron?\n\nVoicefire 5.1 said:\nBy the reeds, at dawn.",
        collection="conversations", title="Heron talk",
    ).document
    first = Message.objects.filter(conversation=chat, role="assistant").order_by("seq").first()
    artifact = artifact_services.artifact_create(
        title="Harbour poem", kind="poem", content="# Harbour\n\nBoats come home.",
        provenance=artifact_services.Provenance(conversation_id=chat.id, message_id=first.id, tool_call_id="call_1"),
    ).artifact
    ThreadHandoff.objects.create(destination=Conversation.objects.create(title="Old destination"),
                                 source=Conversation.objects.create(title="Old source"), summary="old summary")
    return ["/", f"/c/{chat.id}/", f"/archive/{document.pk}/", f"/artifacts/{artifact.pk}/", "/search/?q=heron",
            "/archive/?q=heron", "/memories/suggestions/", "/admin/", "/admin/tools/continuity-cleanup/"]


@pytest.fixture
def crawled(transactional_db, collected_site):
    start = seed()
    client = logged_in_client(collected_site.url, OWNER_PASSWORD)
    try:
        return crawl(client, start)
    finally:
        client.close()


def test_every_page_and_every_file_it_needs_answers_as_collectstatic_serves_them(crawled, collected_site):
    failed_pages = {path: status for path, status in crawled.pages.items() if status >= 400}
    assert not failed_pages, failed_pages
    assert not crawled.broken(), "\n".join(crawled.broken())
    hashed_wrong = [url for url in crawled.files
                    if url not in crawled.from_manifest and hash_count(url) != 1]
    assert not hashed_wrong, [(url, crawled.named_by[url]) for url in hashed_wrong]
    # The crawl reached what it is for: the pages with conditional scripts, and the imports behind them.
    names = " ".join(crawled.files)
    for expected in (r"/js/archive/import_job\.[0-9a-f]{12}\.js", r"/js/archive_claude\.[0-9a-f]{12}\.js",
                     r"/js/branch_button\.[0-9a-f]{12}\.js", r"/vendor/highlight\.js/highlight\.min\.[0-9a-f]{12}\.js",
                     r"/js/memory_proposals\.[0-9a-f]{12}\.js", r"/admin/css/base\.[0-9a-f]{12}\.css",
                     r"/js/chat/thread\.[0-9a-f]{12}\.js", r"/js/check_ins\.[0-9a-f]{12}\.js",
                     r"/css/check_ins\.[0-9a-f]{12}\.css"):
        assert re.search(expected, names), f"the crawl fetched nothing like {expected}"
    assert "/admin/tools/continuity-cleanup/" in crawled.pages and len(crawled.pages) > 40, sorted(crawled.pages)
    assert "Traceback" not in collected_site.log()


def test_chromium_loads_every_page_with_no_failed_request_or_console_error(crawled, collected_site, page: Page):
    problems: list[str] = []
    where = {"page": ""}
    page.on("response", lambda r: problems.append(f"{where['page']}: {r.status} {r.url}") if r.status >= 400 else None)
    page.on("requestfailed", lambda r: None if r.failure == "net::ERR_ABORTED"
            else problems.append(f"{where['page']}: {r.failure} {r.url}"))
    page.on("console", lambda m: problems.append(f"{where['page']}: console {m.text}") if m.type == "error" else None)
    page.set_viewport_size({"width": 1366, "height": 900})
    app = collected_site.url
    page.goto(f"{app}/login/")
    page.fill("#password", OWNER_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r"/c/|/$"))
    for path in crawled.pages:
        where["page"] = path
        page.goto(f"{app}{path}", wait_until="load")
    assert not problems, "\n".join(problems)
    assert not page.js_errors, page.js_errors

    # The Archive page's forms are driven by their scripts: an import_job module, loaded, handles the submit.
    with page.expect_response(re.compile(r"/js/archive/import_job\.[0-9a-f]{12}\.js$")) as loaded:
        page.goto(f"{app}/archive/")
    assert loaded.value.status == 200
    for form in ("[data-chatgpt-import]", "[data-claude-import]"):
        page.locator(form).evaluate("form => form.dispatchEvent(new Event('submit', {cancelable: true}))")
        expect(page.locator(form)).to_contain_text("Choose the export zip")
    assert not problems and not page.js_errors, problems + page.js_errors
