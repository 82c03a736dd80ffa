"""The provider (seed 004 "Provider binding"): the only path to the language model.

Owns the `openai` SDK gateway (`gateway`), the configured provider and the
binding gate that fails closed on drift (`binding`), and the deliberate
binding of legacy history (`legacy_binding`). Base layer: imports models and
`elion` utilities only.
"""
