"""The Claude.ai export importer: `parse` reads the export (conversations with their attached files' text,
projects, memories.json), `store` maps what it read onto archive documents and stores them."""
