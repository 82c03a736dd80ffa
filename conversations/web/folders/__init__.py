"""Folders: create, rename, hide or show, delete (API and pages)."""
