"""The Claude.ai export importer: `parse` reads the export's conversations (each message through `messages`)
and projects, `memories` reads what its memories.json offers, and `store` maps what was read onto archive
documents and stores them."""
