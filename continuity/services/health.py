"""Operational status of stored-prompt reconciliation, for /api/health/.

`{"completed", "pending", "remaining_failures"}`: a recorded completion for
the current policy version answers at once; otherwise the stale prompts and
the failures still standing are counted (two aggregate queries, however many
prompts there are). Remaining failures never read as completion.
"""

from __future__ import annotations

from continuity.services.reconciliation import reconciliation_status as status


def reconciliation_status() -> dict:
    return status().as_dict()
