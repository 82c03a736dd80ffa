"""The durable transcript (seed 004): the message tree and the rules that keep it sound.

Owns the tree walk and live branch (`tree`), stream leases and the stale-stream
sweep (`leases`), tool-call pairing (`tool_pairing`), integrity checks and
repair (`integrity`), the message search index (`search_index`) and permanent
deletion (`deletion`). Base layer: imports models, `transcript.access` and
`elion` utilities only; never continuity, services, sending or web.
"""
