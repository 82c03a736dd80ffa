"""The export importers: each maps its parsed export (`archive.services.chatgpt`, `archive.services.claude`) onto archive
documents and stores them through `archive.services.documents`; `export_steps` holds the steps both share."""
