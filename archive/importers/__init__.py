"""The export importers: each maps its parsed export (`archive.chatgpt`, `archive.claude`) onto archive
documents and stores them through `archive.services`; `export_steps` holds the steps both share."""
