"""Watching for browser dialogs (an injected script's alert) in a page."""

from __future__ import annotations

from playwright.sync_api import Page


class DialogWatch:
    def __init__(self, page: Page):
        self.opened: list[str] = []
        page.on("dialog", self._record)

    def _record(self, dialog):
        self.opened.append(dialog.message)
        dialog.dismiss()
