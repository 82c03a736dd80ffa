"""The continuity rules (seed 000): eligibility (the one answer), the stored static prompt
(`prompt_policy` pure, `prompt_store` database), verbatim handoffs (`handoff_policy`/`handoff_store`), keyword
recall (`recall_policy`/`recall_store`), dynamic context, the request (`request_policy`/`request_store`), kept
history, compaction, reconciliation and Cleanup, and the receivers of the domain events that refresh stored
prompts (`refresh_triggers`: the seed's list of refresh triggers). `<thing>_policy` modules are pure; `<thing>_store`
modules read and write the database. Imports `transcript`, the models and `elion.base` only.
"""
