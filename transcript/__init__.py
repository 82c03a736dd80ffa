"""The durable transcript (seed 004): its rows, the message tree and the rules that keep it sound.

A Django app (issue 45): owns the rows (`models`: conversations, folders, messages, the search index,
attachments and their manifests, a reply's speech), the tree walk and live branch (`tree`), stream leases
and the stale-stream sweep (`leases`), tool-call pairing (`tool_pairing`), integrity checks and repair
(`integrity`), the message search index (`search_index`) and its own part of permanent deletion
(`deletion`), with attachments (`attachments/`), the provider binding (`provider/`) and access. Below
`continuity.rules`: imports its own models and `elion.base` only.
"""
