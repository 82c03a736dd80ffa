"""The continuity governance app: what the assistant may carry from one thread into the next (seed 000).

Sub-packages by layer (`.importlinter`): `web` (transports) above `services` (Branch, Fresh Chat) above
`rules` (eligibility, prompts, handoffs, recall, the request, compaction, reconciliation, Cleanup), which
imports only `transcript` and the models.
"""
