"""Sending: a turn from the owner to a stored, streamed reply.

Owns the send command (`commands`), the locked prepare before any provider
I/O (`prepare`, which asks `continuity.rules.request_store` for the model
request), the offered tools (`tool_offer`), the reply run and
its persistence (`run`, `persist`), the event stream (`events`), the
channel-layer broadcast (`broadcast`), watching and stopping a reply
(`watch`, `stop`) and the tool rounds with the table of tools (`tool_loop`;
`archive.sending` and `check_ins.sending` add theirs). The top service layer:
may import every layer below (services, continuity, base, models); only web
imports it.
"""
