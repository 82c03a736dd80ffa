"""Artifacts: creating, adding versions, reading, listing, deleting (the rules; the tools and the API call these).

An artifact is created by the model's `create_artifact` tool in a reply and
changed only by `update_artifact`, which adds a version: a version's text is
never overwritten. Every version records where it was written (conversation,
assistant message, tool call id). The owner reads, searches, exports and
deletes artifacts; only a permanent deletion of their conversation (or the
owner's DELETE) removes them.

What the model may read back (`model_readable_artifacts`) follows the same
rule as its past-conversation search: the current conversation's artifacts,
and those born in a conversation that may feed automatic continuity for its
persona (`continuity.rules.eligibility`), never hidden, trashed or shielded ones.
Nothing here puts artifact text into a request by itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from django.db import transaction
from django.db.models import Count, Max, OuterRef, Q, QuerySet, Subquery
from django.utils import timezone

from artifacts.models import CONTENT_MAX, TITLE_MAX, Artifact, ArtifactKind, ArtifactVersion
from continuity.rules.eligibility import continuity_sources
from elion.base.errors import InvalidInput, NotFound
from elion.base.rows import access_row, parse_id

QUERY_MAX = 200


@dataclass(frozen=True)
class Provenance:
    """Where a version was written: the reply's conversation and message, and the tool call."""

    conversation_id: UUID
    message_id: UUID
    tool_call_id: str


# --- Input --------------------------------------------------------------------------


def clean_title(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput("title must be non-empty text.", code="invalid_artifact")
    title = " ".join(value.split())
    if len(title) > TITLE_MAX:
        raise InvalidInput(f"title can be at most {TITLE_MAX} characters.", code="invalid_artifact")
    return title


def clean_kind(value: object) -> str:
    if value not in ArtifactKind.values:
        raise InvalidInput(f"kind must be one of {', '.join(ArtifactKind.values)}.", code="invalid_artifact")
    return str(value)


def clean_content(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput("content must be non-empty Markdown text.", code="invalid_artifact")
    if len(value) > CONTENT_MAX:
        raise InvalidInput(f"content can be at most {CONTENT_MAX:,} characters.", code="invalid_artifact")
    return value


def clean_query(value: object) -> str:
    if not isinstance(value, str):
        raise InvalidInput("q must be text.", code="invalid_query")
    query = " ".join(value.split())
    if len(query) > QUERY_MAX:
        raise InvalidInput(f"q can be at most {QUERY_MAX} characters.", code="invalid_query")
    return query


# --- Selectors ----------------------------------------------------------------------


def artifacts_selectable() -> QuerySet[Artifact]:
    """Every artifact, except those of a conversation being deleted forever (gone from every list at once)."""
    return Artifact.objects.filter(conversation__deletion_generation__isnull=True)


def _with_current(queryset: QuerySet[Artifact]) -> QuerySet[Artifact]:
    """Annotated with `version_count` and `current_content` (the highest-numbered version's text)."""
    latest = ArtifactVersion.objects.filter(artifact=OuterRef("pk")).order_by("-number")
    return queryset.annotate(
        version_count=Count("versions"), current_content=Subquery(latest.values("content")[:1])
    )


def access_artifact(artifact_id: object, *, within: QuerySet[Artifact] | None = None) -> Artifact:
    """The artifact with this id (annotated as `_with_current`), or 404 `artifact_not_found`."""
    return access_row(
        _with_current(artifacts_selectable() if within is None else within),
        artifact_id, kind="int", missing="No artifact has that id.", code="artifact_not_found",
    )


def artifacts_list(query: object = "", *, within: QuerySet[Artifact] | None = None) -> list[Artifact]:
    """Newest change first; with a query, those whose title or current text holds every word of it
    (case-insensitively). `within`: the artifacts the caller may see (all selectable ones by default)."""
    rows = _with_current(artifacts_selectable() if within is None else within)
    for word in clean_query(query).split():
        rows = rows.filter(Q(title__icontains=word) | Q(current_content__icontains=word))
    return list(rows.order_by("-updated_at", "-id"))


def model_readable_artifacts(*, persona: str, conversation_id: UUID) -> QuerySet[Artifact]:
    """What `read_artifact` and `update_artifact` may reach: this conversation's artifacts, and those born in
    a conversation that feeds automatic continuity for this persona (never hidden, trashed or shielded)."""
    sources = continuity_sources(persona=persona)
    return artifacts_selectable().filter(Q(conversation_id=conversation_id) | Q(conversation__in=sources))


def reply_versions(message_id: UUID) -> list[ArtifactVersion]:
    """The versions one reply wrote, in the order it wrote them, with their artifacts."""
    return list(
        ArtifactVersion.objects.filter(message_id=message_id, artifact__in=artifacts_selectable())
        .select_related("artifact").order_by("id")
    )


def artifact_version(artifact: Artifact, number: int | None = None) -> ArtifactVersion | None:
    """The version numbered `number` (the latest when None), or None when there is no such version."""
    versions = artifact.versions.order_by("-number")
    return (versions if number is None else versions.filter(number=number)).first()


def access_version(artifact: Artifact, raw_number: object) -> ArtifactVersion:
    """The version a URL names (`None` or "": the latest), or 404 `artifact_version_not_found`."""
    if raw_number in (None, ""):
        version = artifact_version(artifact)
    else:
        number = parse_id(raw_number, "int")
        version = None if number is None else artifact_version(artifact, number)
    if version is None:
        raise NotFound("That artifact has no such version.", code="artifact_version_not_found")
    return version


# --- Writes -------------------------------------------------------------------------


@transaction.atomic
def artifact_create(*, title: object, kind: object, content: object, provenance: Provenance) -> ArtifactVersion:
    """A new artifact and its first version, both stamped with where they were written."""
    artifact = Artifact.objects.create(
        title=clean_title(title), kind=clean_kind(kind),
        conversation_id=provenance.conversation_id, message_id=provenance.message_id,
        tool_call_id=provenance.tool_call_id,
    )
    return _version_add(artifact, clean_content(content), provenance)


@transaction.atomic
def artifact_update(
    *, artifact_id: object, content: object, provenance: Provenance, within: QuerySet[Artifact] | None = None,
) -> ArtifactVersion:
    """The next version of an artifact (`within`: the artifacts the caller may change); earlier ones stay."""
    text = clean_content(content)
    artifact = access_row(
        artifacts_selectable() if within is None else within,
        artifact_id, kind="int", missing="No artifact has that id.", code="artifact_not_found", lock=True,
    )
    return _version_add(artifact, text, provenance)


def _version_add(artifact: Artifact, content: str, provenance: Provenance) -> ArtifactVersion:
    """Precondition: inside a transaction that created or locked `artifact`."""
    highest = artifact.versions.aggregate(highest=Max("number"))["highest"] or 0
    version = ArtifactVersion.objects.create(
        artifact=artifact, number=highest + 1, content=content,
        conversation_id=provenance.conversation_id, message_id=provenance.message_id,
        tool_call_id=provenance.tool_call_id,
    )
    Artifact.objects.filter(pk=artifact.pk).update(updated_at=timezone.now())
    return version


@transaction.atomic
def artifact_delete(*, artifact_id: object) -> None:
    """The owner deletes an artifact with all its versions."""
    access_row(
        artifacts_selectable(), artifact_id, kind="int", missing="No artifact has that id.",
        code="artifact_not_found", lock=True,
    ).delete()


# --- Representations ----------------------------------------------------------------


def artifact_repr(artifact: Artifact) -> dict:
    """Precondition: `artifact` is annotated (`access_artifact`, `artifacts_list`)."""
    return {
        "id": artifact.pk,
        "title": artifact.title,
        "kind": artifact.kind,
        "conversation_id": str(artifact.conversation_id),
        "message_id": str(artifact.message_id),
        "created_at": artifact.created_at.isoformat(),
        "updated_at": artifact.updated_at.isoformat(),
        "versions": artifact.version_count,
    }


def version_repr(version: ArtifactVersion) -> dict:
    return {
        "version": version.number,
        "content": version.content,
        "conversation_id": str(version.conversation_id),
        "message_id": str(version.message_id),
        "tool_call_id": version.tool_call_id,
        "created_at": version.created_at.isoformat(),
    }


def artifact_detail_repr(artifact: Artifact) -> dict:
    """The listing's fields, the current text and every version, oldest first."""
    history = [version_repr(v) for v in artifact.versions.order_by("number")]
    return {**artifact_repr(artifact), "content": artifact.current_content or "", "history": history}


def artifacts_export(conversation_id: UUID) -> list[dict]:
    """The artifacts born in one conversation, for its JSON export, oldest first."""
    rows = _with_current(artifacts_selectable().filter(conversation_id=conversation_id)).order_by("id")
    return [artifact_detail_repr(artifact) for artifact in rows]


def conversation_artifacts_delete(conversation_id: UUID) -> dict[str, int]:
    """A conversation deleted forever (`conversations.services.deletion`): the artifacts born in it (with all
    their versions), and the versions written in it of artifacts born elsewhere."""
    _, per_model = Artifact.objects.filter(conversation_id=conversation_id).delete()
    versions, _ = ArtifactVersion.objects.filter(conversation_id=conversation_id).delete()
    return {
        "artifacts": per_model.get(Artifact._meta.label, 0),
        "artifact_versions": per_model.get(ArtifactVersion._meta.label, 0) + versions,
    }
