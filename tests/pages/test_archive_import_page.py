"""The Archive page's ChatGPT import in a real browser: problems listed, custom instructions offered once."""

from __future__ import annotations

import hashlib

import pytest
from playwright.sync_api import Page, expect

from archive.models import ArchiveDocument
from elion.base.assistant_settings import assistant_settings_get
from tests.archive import chatgpt_export as export
from tests.archive.conftest import make_zip

pytestmark = pytest.mark.browser


JOB_WAIT_MS = 60_000


def test_import_lists_problems_and_saves_offered_instructions_only_when_the_owner_confirms(
    live_app, import_worker, page: Page, tmp_path
):
    split = tmp_path / "split"
    split.mkdir()
    for name, data in export.split_members(with_index=False).items():
        (split / name).write_bytes(data)
    archive = tmp_path / "export.zip"
    archive.write_bytes(make_zip({**export.split_members(with_index=True), **export.images()}))

    page.goto(f"{live_app.url}/archive/")
    form = page.locator("[data-chatgpt-import]")
    form.locator("#import-file").set_input_files(str(archive))
    form.get_by_role("button", name="Import").click()
    # The summary shows when the upload's pieces are in and the background job has ended: a wait for work,
    # not a timing claim (under the whole suite on 2 cores it took longer than expect's 5 s default once).
    expect(form.locator("[data-import-summary]")).to_contain_text(
        "Imported 2 conversation(s) with 7 message(s) and 4 on other branches", timeout=JOB_WAIT_MS
    )
    problems = form.locator("[data-import-problems] li")
    expect(problems).to_have_count(2)
    expect(problems.nth(0)).to_contain_text(export.LOST_ID)
    expect(problems.nth(1)).to_contain_text("#1 Broken tide: it has no message mapping")

    offer = page.locator("[data-instructions-suggestion]")
    expect(offer).to_be_visible()
    expect(offer.locator("textarea")).to_have_value(
        f"About me:\n{export.PROFILE}\n\nHow to respond:\n{export.INSTRUCTIONS}"
    )
    assert assistant_settings_get().custom_instructions == ""  # offered, not saved
    offer.locator("textarea").fill(export.INSTRUCTIONS)  # the owner keeps only part of it
    offer.get_by_role("button", name="Save as custom instructions").click()
    expect(offer.locator("[data-suggestion-status]")).to_have_text("Saved as Settings → Custom instructions.")
    assert assistant_settings_get().custom_instructions == export.INSTRUCTIONS

    # The split files uploaded together are the same export: all duplicates. Settings hold something
    # else than the export's instructions, so this import offers them (once) again.
    page.reload()
    form.locator("#import-file").set_input_files([str(p) for p in sorted(split.iterdir())])
    form.get_by_role("button", name="Import").click()
    expect(form.locator("[data-import-summary]")).to_contain_text("2 already in the archive", timeout=JOB_WAIT_MS)
    expect(offer).to_be_visible()
    offer.get_by_role("button", name="Not now").click()
    expect(offer).to_be_hidden()
    assert assistant_settings_get().custom_instructions == export.INSTRUCTIONS

    harbour = ArchiveDocument.objects.get(title="Harbour at dusk")
    page.goto(f"{live_app.url}/archive/{harbour.pk}/")
    images = page.locator("[data-archive-images] img")
    expect(images).to_have_count(3)
    pier = hashlib.sha256(export.PIER_JPEG).hexdigest()
    served = page.request.get(f"{live_app.url}/api/archive/documents/{harbour.pk}/attachments/{pier}/")
    assert served.status == 200 and served.body() == export.PIER_JPEG
    expect(page.locator("[data-archive-alternates] li").first).to_contain_text("FIRSTREPLY")
