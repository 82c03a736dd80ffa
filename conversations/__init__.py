"""The conversations app: the durable transcript and everything that writes or shows it.

`models.py` and the migrations sit at the top (the app label is `conversations`);
the rest lives in sub-packages named for their job, layered one way (README
"What is where", `.importlinter`): `web` (transports) above `sending` above
`visibility`, `threads`, `characters` and settings saves, above `continuity`,
above the base (`access`, `assistant_settings`, `transcript`, `attachments`,
`provider`), above the models.
"""
