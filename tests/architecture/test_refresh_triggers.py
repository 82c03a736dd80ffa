"""Prompt refresh through domain signals: one table of receivers, and it is the seed's list.

The domain events are declared in `elion.base.domain_events`, sent by the services
that change a prompt's sources, and received in `continuity.rules.refresh_triggers`
(docs/decisions/0007-domain-signals.md). These tests read the table and the wiring;
tests/continuity/test_refresh_triggers_rollback.py shows a failing refresh
failing its sender.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

from continuity.rules import refresh_triggers
from continuity.rules.refresh_triggers import REFRESH_TRIGGERS
from elion.base.domain_events import DOMAIN_EVENTS

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = (
    "elion", "operations", "conversations", "continuity", "memories", "archive", "artifacts", "transcript", "check_ins"
)

# The seed's prompt-refresh triggers (seeds/000, quoted), each with the domain event that carries it.
# "Existing stored prompts can still be refreshed when their source state changes, including:"
SEED_REFRESH_TRIGGERS = {
    "settings_saved": "Settings changes for Elion.",
    "memory_edited": "Edits to memories that the conversation already contains.",
    "memory_deleted": "Deletions of memories, which remove the deleted IDs from affected snapshots.",
    "visibility_changed": "Folder visibility, trash, restore, and Continuity Shield transitions.",
    # "To restore normal automatic continuity, release the shield using the conversation's shield-release
    # control. The release is intentional and refreshes affected saved prompts before reporting success."
    "shield_released": "The release is intentional and refreshes affected saved prompts before reporting success.",
    # "Snapshot lifecycle":
    "snapshot_refreshed": (
        "Explicit refresh: replaces one selected thread’s snapshot with the current eligible memory set and "
        "records the intentional action."
    ),
    "legacy_snapshots_backfilled": (
        "Legacy threads receive a one-time snapshot backfill so older conversations do not fall back to the "
        "global memory collection."
    ),
    # "What the static prompt contains": two sections whose source is not a memory's text or a
    # conversation's visibility, so a change of that source rebuilds the prompts that list it.
    "memories_reordered": "Long-term memories, when any exist — saved facts in their manually controlled global order",
    "character_changed": "Saved characters, when any exist — names from Character Studio and guidance for image generation.",
}
# "New memory additions and bulk imports do not refresh older conversation snapshots."
SEED_NOT_TRIGGERS = ("memory_added", "memories_imported")


def _event_name(event) -> str:
    (name,) = [name for name, declared in DOMAIN_EVENTS.items() if declared is event]
    return name


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_the_receivers_table_equals_the_seeds_list_of_refresh_triggers():
    table = {_event_name(event): receiver for event, receiver in REFRESH_TRIGGERS}
    assert len(table) == len(REFRESH_TRIGGERS), "one receiver per event"
    assert set(table) == set(SEED_REFRESH_TRIGGERS)
    assert set(DOMAIN_EVENTS) == set(SEED_REFRESH_TRIGGERS), "every declared event is a refresh trigger"
    assert not set(SEED_NOT_TRIGGERS) & set(DOMAIN_EVENTS)
    for name, quote in SEED_REFRESH_TRIGGERS.items():
        assert _one_line(quote) in _one_line(table[name].__doc__), f"{table[name].__name__} quotes the seed"


def test_each_domain_event_is_connected_to_exactly_its_receiver_of_the_table():
    refresh_triggers.connect_refresh_triggers()  # a second connect adds nothing (dispatch_uid)
    table = {_event_name(event): receiver for event, receiver in REFRESH_TRIGGERS}
    for name, event in DOMAIN_EVENTS.items():
        sync_receivers, async_receivers = event._live_receivers(None)
        assert (sync_receivers, async_receivers) == ([table[name]], []), name


def test_only_the_refresh_triggers_and_the_reconciliation_rebuild_stored_prompts():
    """No module but the receivers imports the rebuild: every refresh on a change of a prompt's source goes
    through a domain event. The one other caller is the reconciliation of dormant prompts
    (`continuity.services.reconciliation`), which changes no source: rebuilding them is its own job."""
    rebuilds = {"static_prompts_rebuild"}
    importers = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if (
                    isinstance(node, ast.ImportFrom)
                    and node.module == "continuity.rules.prompt_store"
                    and rebuilds & {alias.name for alias in node.names}
                ):
                    importers.append(str(path.relative_to(ROOT)))
    assert importers == ["continuity/rules/refresh_triggers.py", "continuity/services/reconciliation.py"]


# The events whose receivers mark prompts stale (a scope that grows with the owner's conversations) rather
# than rebuilding them in the sender's transaction (`continuity.rules.prompt_refresh`).
MARKING_EVENTS = frozenset({
    "settings_saved", "character_changed", "memory_edited", "memory_deleted", "memories_reordered",
    "visibility_changed", "shield_released",
})
# Helpers whose precondition is that their caller is such a service (they send a marking event).
MARKING_HELPERS = frozenset({"conversation_move_locked"})


def _decorator_names(function: ast.FunctionDef) -> set[str]:
    return {node.id if isinstance(node, ast.Name) else getattr(node, "attr", "") for node in function.decorator_list}


def test_every_service_whose_event_marks_prompts_rebuilds_them_before_it_returns():
    """Seed: refreshed "before the operation reports success". A service that sends a marking event (or
    calls a helper that does) is wrapped in `refreshes_stale_prompts`, which rebuilds the marked prompts
    after its transaction and before it returns."""
    unwrapped, senders = [], []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            for function in ast.walk(ast.parse(path.read_text())):
                if not isinstance(function, ast.FunctionDef) or function.name in MARKING_HELPERS:
                    continue
                marks = any(
                    isinstance(call, ast.Call)
                    and (
                        (isinstance(call.func, ast.Attribute) and call.func.attr == "send"
                         and isinstance(call.func.value, ast.Name) and call.func.value.id in MARKING_EVENTS)
                        or (isinstance(call.func, ast.Name) and call.func.id in MARKING_HELPERS)
                    )
                    for call in ast.walk(function)
                )
                if marks:
                    senders.append(function.name)
                    if "refreshes_stale_prompts" not in _decorator_names(function):
                        unwrapped.append(f"{path.relative_to(ROOT)}:{function.name}")
    assert len(senders) >= 12, senders
    assert unwrapped == []
    assert {_event_name(event) for event, receiver in REFRESH_TRIGGERS if "mark_stale" in _source(receiver)} == (
        MARKING_EVENTS
    )


def _source(receiver) -> str:
    return inspect.getsource(receiver) + "".join(
        inspect.getsource(getattr(refresh_triggers, name))
        for name in ("_handoff_destinations_mark",)
        if name in inspect.getsource(receiver)
    )
