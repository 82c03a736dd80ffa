"""Long-term memories and the conversation-scoped snapshots that govern them.

Services (`services`, `snapshots`, `importing`) sit with the other services:
they may import `continuity` (a memory change rebuilds stored prompts) and
the base layer; `web/` holds the Memories API and page.
"""
