"""Archive services: documents (`documents`), the ChatGPT and Claude.ai importers (`importers`, with their
parsers), import jobs and runs, the library, search and continuation. Services layer.
"""
