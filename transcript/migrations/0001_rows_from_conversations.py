"""The transcript's rows join the `transcript` app (issue 45) where they already are: each model keeps its
`conversations_*` table (`db_table`), so the move is state only and no data moves. SQLite's full-text triggers
on the message table (migration conversations 0022 explains why a rebuild would lose them) stay untouched.
The other apps' foreign keys follow (their own state-only migrations), then conversations forgets the models
(conversations 0033)."""

import django.db.models.deletion
import django.db.models.manager
import uuid
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('conversations', '0032_message_read_aloud_at'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='Conversation',
                    fields=[
                        ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                        ('title', models.CharField(blank=True, default='', max_length=300)),
                        ('persona', models.CharField(choices=[('elion', 'Elion'), ('clipboard', 'Clipboard')], default='elion', max_length=20)),
                        ('trashed', models.BooleanField(default=False)),
                        ('shielded', models.BooleanField(default=False)),
                        ('private', models.BooleanField(default=False)),
                        ('origin', models.CharField(choices=[('new_chat', 'New chat'), ('branch', 'Branch / Fresh Chat'), ('fork', 'Fork'), ('legacy', 'Legacy'), ('imported', 'Imported')], default='new_chat', max_length=20)),
                        ('title_auto', models.BooleanField(default=False)),
                        ('last_seq', models.PositiveIntegerField(default=0)),
                        ('deletion_generation', models.UUIDField(blank=True, editable=False, null=True)),
                        ('in_view', models.JSONField(blank=True, default=None, null=True)),
                        ('prompt_stale', models.BooleanField(default=False)),
                        ('unread', models.BooleanField(default=False)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                    ],
                    options={
                        'db_table': 'conversations_conversation',
                        'ordering': ['-updated_at'],
                        'base_manager_name': 'all_objects',
                    },
                    managers=[
                        ('objects', django.db.models.manager.Manager()),
                        ('all_objects', django.db.models.manager.Manager()),
                    ],
                ),
                migrations.CreateModel(
                    name='Folder',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=200)),
                        ('hidden', models.BooleanField(default=False)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                    ],
                    options={
                        'db_table': 'conversations_folder',
                        'ordering': ['name', 'id'],
                    },
                ),
                migrations.CreateModel(
                    name='Attachment',
                    fields=[
                        ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                        ('sha256', models.CharField(db_index=True, max_length=64)),
                        ('size', models.PositiveBigIntegerField()),
                        ('name', models.CharField(max_length=255)),
                        ('mime', models.CharField(max_length=100)),
                        ('kind', models.CharField(choices=[('image', 'Image'), ('file', 'File'), ('audio', 'Audio')], max_length=10)),
                        ('text', models.TextField(blank=True, default='')),
                        ('scope_conversation_id', models.UUIDField(blank=True, null=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('attached_at', models.DateTimeField(blank=True, null=True)),
                        ('gc_claimed_at', models.DateTimeField(blank=True, null=True)),
                        ('generated', models.BooleanField(default=False)),
                        ('generated_character', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='generated_images', to='conversations.character')),
                    ],
                    options={
                        'db_table': 'conversations_attachment',
                    },
                ),
                migrations.CreateModel(
                    name='AttachmentBlobIdentity',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('sha256', models.CharField(max_length=64)),
                        ('file_identity', models.CharField(max_length=120)),
                        ('verified_at', models.DateTimeField()),
                        ('conversation', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='blob_identities', to='transcript.conversation')),
                    ],
                    options={
                        'db_table': 'conversations_attachmentblobidentity',
                    },
                ),
                migrations.CreateModel(
                    name='ConversationDeletion',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('conversation_id', models.UUIDField(db_index=True)),
                        ('generation', models.UUIDField(unique=True)),
                        ('state', models.CharField(choices=[('pending', 'Pending'), ('complete', 'Complete')], default='pending', max_length=20)),
                        ('next_step', models.CharField(blank=True, default='', max_length=50)),
                        ('counts', models.JSONField(blank=True, default=dict)),
                        ('claim', models.UUIDField(blank=True, null=True)),
                        ('claimed_until', models.DateTimeField(blank=True, null=True)),
                        ('attempts', models.PositiveIntegerField(default=0)),
                        ('requested_at', models.DateTimeField(auto_now_add=True)),
                        ('completed_at', models.DateTimeField(blank=True, null=True)),
                    ],
                    options={
                        'db_table': 'conversations_conversationdeletion',
                        'indexes': [models.Index(fields=['state', 'claimed_until'], name='deletion_state_claim')],
                    },
                ),
                migrations.AddField(
                    model_name='conversation',
                    name='folder',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='conversations', to='transcript.folder'),
                ),
                migrations.CreateModel(
                    name='IdempotentAction',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('action', models.CharField(max_length=30)),
                        ('key', models.CharField(max_length=200)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('result', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='transcript.conversation')),
                        ('source', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='transcript.conversation')),
                    ],
                    options={
                        'db_table': 'conversations_idempotentaction',
                    },
                ),
                migrations.CreateModel(
                    name='Message',
                    fields=[
                        ('id', models.UUIDField(default=uuid.uuid4, primary_key=True, serialize=False)),
                        ('seq', models.PositiveIntegerField()),
                        ('role', models.CharField(choices=[('system', 'System'), ('user', 'User'), ('assistant', 'Assistant'), ('tool', 'Tool')], max_length=20)),
                        ('kind', models.CharField(choices=[('ordinary', 'Ordinary'), ('static_prompt', 'Stored static prompt'), ('handoff_artifact', 'Branch / Fresh Chat handoff'), ('tool_call', 'Tool call'), ('tool_result', 'Tool result'), ('check_in_trigger', 'Check-in trigger')], default='ordinary', max_length=30)),
                        ('content', models.TextField(blank=True, default='')),
                        ('parts', models.JSONField(blank=True, default=list)),
                        ('status', models.CharField(choices=[('streaming', 'Streaming'), ('complete', 'Complete'), ('interrupted', 'Interrupted'), ('failed', 'Failed'), ('incomplete', 'Incomplete')], default='complete', max_length=20)),
                        ('error', models.CharField(blank=True, default='', max_length=100)),
                        ('error_detail', models.TextField(blank=True, default='')),
                        ('metadata', models.JSONField(blank=True, default=dict)),
                        ('provider_id', models.CharField(blank=True, default='', max_length=100)),
                        ('provider_type', models.CharField(blank=True, default='', max_length=50)),
                        ('model', models.CharField(blank=True, default='', max_length=100)),
                        ('route_fingerprint', models.CharField(blank=True, default='', max_length=64)),
                        ('lease_expires_at', models.DateTimeField(blank=True, null=True)),
                        ('stop_requested_at', models.DateTimeField(blank=True, null=True)),
                        ('read_aloud_at', models.DateTimeField(blank=True, null=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                        ('branch_depth', models.PositiveIntegerField(default=0)),
                        ('branch_tokens', models.BigIntegerField(default=0)),
                        ('branch_born', models.BooleanField(default=False)),
                        ('conversation', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='messages', to='transcript.conversation')),
                        ('parent', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='children', to='transcript.message')),
                    ],
                    options={
                        'db_table': 'conversations_message',
                        'ordering': ['conversation', 'seq'],
                    },
                ),
                migrations.AddField(
                    model_name='conversation',
                    name='head',
                    field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='transcript.message'),
                ),
                migrations.CreateModel(
                    name='MessageAttachment',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('position', models.PositiveSmallIntegerField()),
                        ('attachment', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='manifest_entries', to='transcript.attachment')),
                        ('conversation', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='manifest_entries', to='transcript.conversation')),
                        ('message', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='manifest', to='transcript.message')),
                    ],
                    options={
                        'db_table': 'conversations_messageattachment',
                        'ordering': ['message_id', 'position'],
                    },
                ),
                migrations.CreateModel(
                    name='MessageSearchEntry',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('search_text', models.TextField(blank=True, null=True)),
                        ('conversation', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='transcript.conversation')),
                        ('message', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='search_entry', to='transcript.message')),
                    ],
                    options={
                        'db_table': 'conversations_messagesearchentry',
                    },
                ),
                migrations.CreateModel(
                    name='MessageSpeech',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('key', models.CharField(max_length=64)),
                        ('sha256', models.CharField(max_length=64)),
                        ('size', models.PositiveBigIntegerField()),
                        ('mime', models.CharField(max_length=40)),
                        ('voice', models.CharField(max_length=40)),
                        ('model', models.CharField(max_length=100)),
                        ('demo', models.BooleanField(default=False)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('conversation', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='speech', to='transcript.conversation')),
                        ('message', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='speech', to='transcript.message')),
                    ],
                    options={
                        'db_table': 'conversations_messagespeech',
                    },
                ),
                migrations.AddIndex(
                    model_name='attachment',
                    index=models.Index(fields=['attached_at', 'created_at'], name='attachment_gc_scan'),
                ),
                migrations.AddConstraint(
                    model_name='attachmentblobidentity',
                    constraint=models.UniqueConstraint(fields=('conversation', 'sha256'), name='blob_identity_unique'),
                ),
                migrations.AddConstraint(
                    model_name='idempotentaction',
                    constraint=models.UniqueConstraint(fields=('action', 'source', 'key'), name='idempotent_action_key_unique'),
                ),
                migrations.AddIndex(
                    model_name='message',
                    index=models.Index(fields=['status', 'lease_expires_at'], name='message_status_lease'),
                ),
                migrations.AddIndex(
                    model_name='message',
                    index=models.Index(fields=['conversation', 'updated_at'], name='message_conversation_changed'),
                ),
                migrations.AddIndex(
                    model_name='message',
                    index=models.Index(condition=models.Q(('status', 'streaming')), fields=['conversation'], name='message_conversation_streaming'),
                ),
                migrations.AddIndex(
                    model_name='message',
                    index=models.Index(condition=models.Q(('role', 'system'), _negated=True), fields=['conversation', 'provider_id', 'provider_type', 'model', 'route_fingerprint'], name='message_binding_ends'),
                ),
                migrations.AddIndex(
                    model_name='message',
                    index=models.Index(fields=['conversation', 'role', 'kind', 'provider_id', 'provider_type', 'model', 'route_fingerprint'], name='message_conversation_binding'),
                ),
                migrations.AddIndex(
                    model_name='message',
                    index=models.Index(fields=['conversation', 'parent'], name='message_conversation_parent'),
                ),
                migrations.AddIndex(
                    model_name='message',
                    index=models.Index(condition=models.Q(('kind', 'handoff_artifact')), fields=['conversation'], name='message_conversation_handoff'),
                ),
                migrations.AddConstraint(
                    model_name='message',
                    constraint=models.UniqueConstraint(fields=('conversation', 'seq'), name='message_seq_unique_per_conversation'),
                ),
                migrations.AddConstraint(
                    model_name='message',
                    constraint=models.UniqueConstraint(condition=models.Q(('role', 'system')), fields=('conversation',), name='one_system_message_per_conversation'),
                ),
                migrations.AddIndex(
                    model_name='conversation',
                    index=models.Index(fields=['persona', 'trashed', '-updated_at'], name='conv_persona_recent'),
                ),
                migrations.AddIndex(
                    model_name='conversation',
                    index=models.Index(condition=models.Q(('prompt_stale', True)), fields=['id'], name='conversation_prompt_stale'),
                ),
                migrations.AddIndex(
                    model_name='conversation',
                    index=models.Index(fields=['-updated_at', '-id'], name='conversation_recent'),
                ),
                migrations.AddIndex(
                    model_name='conversation',
                    index=models.Index(fields=['persona', '-updated_at', '-id'], name='conversation_persona_recent'),
                ),
                migrations.AddIndex(
                    model_name='conversation',
                    index=models.Index(condition=models.Q(('trashed', True)), fields=['id'], name='conversation_trashed'),
                ),
                migrations.AddIndex(
                    model_name='messageattachment',
                    index=models.Index(fields=['conversation', 'message', 'position'], name='manifest_conversation_order'),
                ),
                migrations.AddConstraint(
                    model_name='messageattachment',
                    constraint=models.UniqueConstraint(fields=('message', 'position'), name='manifest_position_unique'),
                ),
                migrations.AddConstraint(
                    model_name='messageattachment',
                    constraint=models.UniqueConstraint(fields=('message', 'attachment'), name='manifest_attachment_unique'),
                ),
                migrations.AddIndex(
                    model_name='messagesearchentry',
                    index=models.Index(condition=models.Q(('search_text__isnull', True)), fields=['id'], name='message_search_pending'),
                ),
                migrations.AddIndex(
                    model_name='messagesearchentry',
                    index=models.Index(fields=['conversation', 'id'], name='message_search_conv_newest'),
                ),
                migrations.AddIndex(
                    model_name='messagespeech',
                    index=models.Index(fields=['conversation', 'sha256'], name='message_speech_blob'),
                ),
                migrations.AddConstraint(
                    model_name='messagespeech',
                    constraint=models.UniqueConstraint(fields=('message', 'key'), name='message_speech_key_unique'),
                ),
            ],
        ),
    ]
