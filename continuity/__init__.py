"""The continuity governance layer: what the assistant may carry from one thread into the next.

Composition only: eligibility (the one answer), the stored static prompt and
its policy markers, verbatim handoffs, keyword recall, dynamic context,
request building and assembly, compaction, reconciliation and Cleanup. It
imports the base layer of `conversations` and the models; `web/` holds its
transports, and Branch / Fresh Chat (`branching`) sit with the services.
"""
