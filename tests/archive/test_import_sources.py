"""The export importers by source (issue 32): one table, read by the one import view, the page and the jobs."""

from __future__ import annotations

import pytest
from django.urls import resolve, reverse

from archive.services.importers.sources import IMPORTERS, importer_for
from archive.web.api import ExportImportView
from archive.web.pages import IMPORT_ACTIONS
from elion.base.errors import InvalidInput


def test_every_source_of_the_table_is_served_by_the_one_import_view_and_the_page_form():
    for source in IMPORTERS:
        view = resolve(reverse(f"api-archive-import-{source}")).func.cls
        assert issubclass(view, ExportImportView), view
        assert view.source == source
        # The subclass only names its source: the import itself is the one view's.
        assert getattr(view.post, "__wrapped__", view.post) is ExportImportView.post
    assert sorted(source for source, _ in IMPORT_ACTIONS.values()) == sorted(IMPORTERS)


def test_a_source_no_importer_reads_is_a_400():
    with pytest.raises(InvalidInput) as refused:
        importer_for("gemini")
    assert (refused.value.status, refused.value.code) == (400, "unknown_import_kind")
    assert "chatgpt, claude" in refused.value.detail
