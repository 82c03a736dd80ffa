"""The conversations app: the models of the durable transcript (app label `conversations`) and what writes or shows it.

Sub-packages by layer (`.importlinter`): `web` (transports) above `sending` (the send pipeline) above
`services` (threads, visibility, characters, settings). The transcript's rules themselves live in the
top-level `transcript` package, below `continuity.rules`.
"""
