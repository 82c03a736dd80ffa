"""The archive (explicit historical access) and the Library (files the owner places for Elion to read).

Services (`services`, `library`, `chatgpt`, `parsing`, `search`) sit with the
other services; `uploads` (reading uploaded bytes safely) is in the base layer;
`web/` holds their API and pages.
"""
