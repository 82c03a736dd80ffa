"""Visibility: hidden folders, trash and restore, shields, and the owner's deliberate search.

Owns the transitions that refresh affected stored prompts before they report
success (`transitions`), the read side for the pages (`selectors`) and Past
Conversation Search (`past_search`). Service layer: imports continuity
(eligibility, prompt storage), memories' lock and the base layer; never
sending or web.
"""
