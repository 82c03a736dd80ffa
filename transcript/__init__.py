"""The durable transcript (seed 004): the message tree and the rules that keep it sound.

Owns the tree walk and live branch (`tree`), stream leases and the stale-stream
sweep (`leases`), tool-call pairing (`tool_pairing`), integrity checks and
repair (`integrity`), the message search index (`search_index`) and permanent
deletion (`deletion`), with attachments (`attachments/`), the provider binding (`provider/`), access,
assistant settings and upload reading. Below `continuity.rules`: imports models and `elion.base` only.
"""
