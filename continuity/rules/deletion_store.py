"""What a conversation deleted forever takes of continuity's rows: the handoff it received, its compactions
and its reconciliation failures; the handoffs it gave keep their provenance, without the source.

One step of the permanent deletion (`conversations.services.deletion`), run in the step's transaction. A store
of continuity's rows, so it sits with the rules' stores: `continuity.services` creates threads through
`conversations.services`, which runs this step, and the two service packages import one way only.
"""

from __future__ import annotations

from uuid import UUID

from continuity.models import Compaction, PromptReconciliationFailure, ThreadHandoff


def conversation_continuity_rows_delete(conversation_id: UUID) -> dict[str, int]:
    handoffs, _ = ThreadHandoff.objects.filter(destination_id=conversation_id).delete()
    # Handoffs this conversation gave keep their provenance row, without the source.
    detached = ThreadHandoff.objects.filter(source_id=conversation_id).update(source=None)
    failures, _ = PromptReconciliationFailure.objects.filter(conversation_id=conversation_id).delete()
    compactions, _ = Compaction.objects.filter(conversation_id=conversation_id).delete()
    return {
        "handoffs": handoffs,
        "handoff_sources_detached": detached,
        "reconciliation_failures": failures,
        "compactions": compactions,
    }
