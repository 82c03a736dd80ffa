"""Each message's place on its branch, as data: written once by the append that adds it.

A message's parent never changes (the tree is append-only), so what lies above
it on its branch is fixed when it is appended. Three columns record it, each
computed from the parent's alone:

* `branch_depth`: how many messages lie above it (the root's is 0), so the
  message is at index `branch_depth` of every branch through it.
* `branch_tokens`: the stored token measure (`stored_turn_tokens`) of it and
  of every message above it. A send finds where its window begins from these
  with one bounded read (`transcript.branch_rows`), and the trim chain's
  points are fixed by them (`continuity.rules.request_policy.trim_start`).
  A reply is appended empty and streams; its own measure is added when it is
  finalised (`conversations.sending.run`), before anything is appended under it.
* `branch_born`: a finished ordinary reply lies above it (seed 000's birth
  period is over for the branch before it), as the rows stood when it was
  appended.

The measure is an estimate used to place things, never a budget: a send counts
the request's real tokens over the rows it read. `tests/conversations/transcript/
test_branch_columns.py` compares the columns with a walk from scratch after
random appends, edits, retries, rewinds, forks and version switches.
"""

from __future__ import annotations

import math

from conversations.models import Message, MessageKind, MessageStatus, Role

MEASURED_ROLES = (Role.USER, Role.ASSISTANT)


def stored_turn_tokens(role: str, kind: str, content: str) -> int:
    """A message's own share of `branch_tokens`: its text's estimate (four characters a token), for the
    user and assistant speech a request can carry; 0 for anything else."""
    if role not in MEASURED_ROLES or kind != MessageKind.ORDINARY or not content:
        return 0
    return math.ceil(len(content) / 4)


def ends_birth_period(message: Message) -> bool:
    """Is this the kind of message that ends a branch's birth period: a finished ordinary reply with words
    (`continuity.rules.dynamic_context.in_birth_period`)?"""
    return (
        message.role == Role.ASSISTANT
        and message.kind == MessageKind.ORDINARY
        and message.status == MessageStatus.COMPLETE
        and bool(message.content.strip())
    )


def branch_columns_under(parent: Message | None, *, role: str, kind: str, content: str) -> dict[str, object]:
    """The branch columns of a new message under `parent` (a root when None)."""
    own = stored_turn_tokens(role, kind, content)
    if parent is None:
        return {"branch_depth": 0, "branch_tokens": own, "branch_born": False}
    return {
        "branch_depth": parent.branch_depth + 1,
        "branch_tokens": parent.branch_tokens + own,
        "branch_born": parent.branch_born or ends_birth_period(parent),
    }
