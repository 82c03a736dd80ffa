"""Archive services: documents (`documents`), the ChatGPT and Claude.ai importers (`importers`, with their
parsers), import jobs and runs, the library, search, and continuation (`continuation`; `handoff_store` reads a document's turns for it and
for continuity's prompt). Services layer.
"""
