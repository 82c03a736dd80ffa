"""The provider (seed 004 "Provider binding"): the only path to the language model.

Owns the `openai` SDK gateway (`gateway`, the entry point: retries and the
choice of adapter; `config` the route fingerprint, options and pooled client;
`events` the neutral events; `errors` the readable failures; `responses` and
`chat` the two API adapters; `images` the Images API; `demo` the offline
demo), the configured provider and the
binding gate that fails closed on drift (`binding`), and the deliberate
binding of legacy history (`legacy_binding`). Base layer: imports models and
`elion` utilities only.
"""
