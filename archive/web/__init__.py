"""The web layer of the archive and the Library: their API and pages. Thin transports over `archive` services; top layer."""
