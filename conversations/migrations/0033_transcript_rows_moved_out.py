"""The transcript's rows now belong to the `transcript` app (transcript 0001, issue 45): conversations forgets
them. State only: the tables stay, under their `conversations_*` names, as the transcript's models."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('artifacts', '0002_rows_point_at_transcript'),
        ('check_ins', '0004_rows_point_at_transcript'),
        ('continuity', '0005_rows_point_at_transcript'),
        ('conversations', '0032_message_read_aloud_at'),
        ('memories', '0004_rows_point_at_transcript'),
        ('transcript', '0001_rows_from_conversations'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(
                    model_name='attachment',
                    name='generated_character',
                ),
                migrations.RemoveField(
                    model_name='messageattachment',
                    name='attachment',
                ),
                migrations.RemoveField(
                    model_name='attachmentblobidentity',
                    name='conversation',
                ),
                migrations.RemoveField(
                    model_name='conversation',
                    name='folder',
                ),
                migrations.RemoveField(
                    model_name='conversation',
                    name='head',
                ),
                migrations.RemoveField(
                    model_name='idempotentaction',
                    name='result',
                ),
                migrations.RemoveField(
                    model_name='message',
                    name='conversation',
                ),
                migrations.RemoveField(
                    model_name='idempotentaction',
                    name='source',
                ),
                migrations.RemoveField(
                    model_name='messagespeech',
                    name='conversation',
                ),
                migrations.RemoveField(
                    model_name='messagesearchentry',
                    name='conversation',
                ),
                migrations.RemoveField(
                    model_name='messageattachment',
                    name='conversation',
                ),
                migrations.DeleteModel(
                    name='ConversationDeletion',
                ),
                migrations.RemoveField(
                    model_name='message',
                    name='parent',
                ),
                migrations.RemoveField(
                    model_name='messagespeech',
                    name='message',
                ),
                migrations.RemoveField(
                    model_name='messagesearchentry',
                    name='message',
                ),
                migrations.RemoveField(
                    model_name='messageattachment',
                    name='message',
                ),
                migrations.DeleteModel(
                    name='Attachment',
                ),
                migrations.DeleteModel(
                    name='AttachmentBlobIdentity',
                ),
                migrations.DeleteModel(
                    name='Folder',
                ),
                migrations.DeleteModel(
                    name='IdempotentAction',
                ),
                migrations.DeleteModel(
                    name='Conversation',
                ),
                migrations.DeleteModel(
                    name='MessageSpeech',
                ),
                migrations.DeleteModel(
                    name='MessageSearchEntry',
                ),
                migrations.DeleteModel(
                    name='Message',
                ),
                migrations.DeleteModel(
                    name='MessageAttachment',
                ),
            ],
        ),
    ]
