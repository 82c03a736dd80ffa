"""What memory and check-in proposals share (issues 35 and 44): Elion suggests, only the owner decides.

A proposal is a row with a `status` (`pending`, `approved`, `dismissed`: each app's `ProposalStatus`)
and a `decided_at`. The propose tool records one; the owner approves or dismisses it. The steps that
are the same job for both kinds are here: the tool's answer (`ProposalOutcome`), the model's reason
cleaned, the pending check before a decision, the owner's edits checked against the fields approve
takes, the dismissal, and the review list's status filter. What differs (what a proposal holds, what
counts as a duplicate, what approve creates) stays in `memories.services.proposals` and
`check_ins.services.proposals`. Bottom layer: the callers lock the row first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from django.db.models import QuerySet
from django.utils import timezone

from elion.base.errors import Conflict, InvalidInput

PENDING, APPROVED, DISMISSED = "pending", "approved", "dismissed"
STATUSES = (PENDING, APPROVED, DISMISSED)


class Proposal(Protocol):
    """A proposal row (`MemoryProposal`, `CheckInProposal`)."""

    status: str
    decided_at: object

    def save(self, *, update_fields: Sequence[str]) -> None: ...


P = TypeVar("P")
Row = TypeVar("Row", bound=Proposal)


@dataclass(frozen=True)
class ProposalOutcome(Generic[P]):
    """What a propose tool's service did: `proposed` with the row, or `refused` with a code and a sentence
    the model reads."""

    status: str
    code: str
    detail: str
    proposal: P | None = None


def proposal_refused(code: str, detail: str) -> ProposalOutcome:
    return ProposalOutcome("refused", code, detail)


def proposal_reason_clean(value: object, *, limit: int) -> str:
    """The model's reason for a suggestion: a sentence, spacing collapsed, at most `limit` characters (the
    column's length)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidInput("reason must be a sentence (a string).", code="invalid_reason")
    reason = " ".join(value.split())
    if len(reason) > limit:
        raise InvalidInput(f"reason can be at most {limit} characters.", code="invalid_reason")
    return reason


def proposal_pending_check(proposal: Proposal, action: str, *, code: str) -> None:
    """409 `code` unless the proposal still waits for the owner."""
    if proposal.status != PENDING:
        raise Conflict(f"This proposal is already {proposal.status}; it cannot be {action}.", code=code)


def proposal_changes_checked(changes: object, fields: Sequence[str], *, noun: str, code: str) -> dict:
    """The owner's edits on approve: a JSON object naming only `fields` (400 otherwise)."""
    if not isinstance(changes, dict):
        raise InvalidInput("The edits must be a JSON object.", code="malformed_request")
    unknown = set(changes) - set(fields)
    if unknown:
        raise InvalidInput(f"Unknown {noun} fields: {', '.join(sorted(map(str, unknown)))}.", code=code)
    return changes


def proposal_dismissed(proposal: Row, *, code: str) -> Row:
    """Keep a pending proposal as dismissed (the same suggestion is refused from then on); dismissing twice
    is a no-op. Precondition: inside a transaction holding the proposal's row lock."""
    if proposal.status == DISMISSED:
        return proposal
    proposal_pending_check(proposal, "dismissed", code=code)
    proposal.status, proposal.decided_at = DISMISSED, timezone.now()
    proposal.save(update_fields=["status", "decided_at"])
    return proposal


def proposals_of_status(rows: QuerySet, status: object) -> QuerySet:
    """The review list: pending and dismissed (approved ones live on as what they made), or one status."""
    if status in (None, ""):
        return rows.exclude(status=APPROVED)
    if status not in STATUSES:
        raise InvalidInput(f"status must be one of {', '.join(STATUSES)}.", code="invalid_status")
    return rows.filter(status=status)
