"""Titles are words, origins are badges (issue 34).

`title_auto` records that the app made a title; `origin` gains `imported` (an archive
document's "Continue in a new chat"). Then, once, existing titles the app made are
rewritten, and nothing else:

* a branch's " (branch)" and a fork's " (fork)" suffix goes (the badge says it now);
* a title that is exactly what the first send used to make (the first message's raw
  text, whitespace folded, cut at 60) becomes that message's words
  (`title_from_first_message`); for a branch, its source's first message is the one
  that made it;
* an archive continuation (its handoff bubble names a `source_document_id`) becomes
  origin `imported`.

A title the owner typed matches none of these and is kept as it is.
"""

from django.db import migrations, models

from conversations.services.threads.titles import OLD_ORIGIN_SUFFIXES, title_before_words, title_from_first_message

BATCH = 500


def _first_user_text(Message, conversation_id):
    return (
        Message.objects.filter(conversation_id=conversation_id, role="user", kind="ordinary")
        .order_by("seq").values_list("content", flat=True).first()
    )


def _handoff_metadata(Message, conversation_id) -> dict:
    metadata = (
        Message.objects.filter(conversation_id=conversation_id, kind="handoff_artifact")
        .order_by("seq").values_list("metadata", flat=True).first()
    )
    return metadata if isinstance(metadata, dict) else {}


def title_words_from_old(title: str, content: str | None) -> tuple[str, bool]:
    """(the title, made by the app?) for a title compared with the first message that may have made it."""
    if not content or not content.strip():
        return title, False
    if title == title_before_words(content) or title == title_from_first_message(content):
        return title_from_first_message(content), True
    return title, False


def rewrite_auto_titles(apps, schema_editor):
    Conversation = apps.get_model("conversations", "Conversation")
    Message = apps.get_model("conversations", "Message")
    ids = list(Conversation.objects.order_by("pk").values_list("pk", flat=True))
    for start in range(0, len(ids), BATCH):
        for conversation in Conversation.objects.filter(pk__in=ids[start:start + BATCH]):
            title, origin, auto = conversation.title, conversation.origin, False
            suffix = OLD_ORIGIN_SUFFIXES.get(origin)
            if suffix and title.endswith(suffix):
                title, auto = title[: -len(suffix)], True
            metadata = _handoff_metadata(Message, conversation.pk) if origin == "branch" else {}
            if metadata.get("source_document_id") is not None:
                origin = "imported"
            source_id = metadata.get("source_conversation_id")
            made_from = _first_user_text(Message, source_id) if source_id else None
            if made_from is None and origin != "branch":
                made_from = _first_user_text(Message, conversation.pk)
            title, made = title_words_from_old(title, made_from)
            auto = auto or made
            if (title, origin, auto) != (conversation.title, conversation.origin, conversation.title_auto):
                Conversation.objects.filter(pk=conversation.pk).update(title=title, origin=origin, title_auto=auto)


class Migration(migrations.Migration):

    dependencies = [
        ('conversations', '0019_memory_suggestions_setting'),
    ]

    operations = [
        migrations.AddField(
            model_name='conversation',
            name='title_auto',
            field=models.BooleanField(default=False),
        ),
        migrations.AlterField(
            model_name='conversation',
            name='origin',
            field=models.CharField(choices=[('new_chat', 'New chat'), ('branch', 'Branch / Fresh Chat'), ('fork', 'Fork'), ('legacy', 'Legacy'), ('imported', 'Imported')], default='new_chat', max_length=20),
        ),
        migrations.RunPython(rewrite_auto_titles, migrations.RunPython.noop),
    ]
