"""Compacted summaries: model-written projections of a conversation's earlier turns."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('continuity', '0003_schedule_prompt_reconciliation'),
        ('conversations', '0004_message_search_index'),
    ]

    operations = [
        migrations.CreateModel(
            name='Compaction',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('summary', models.TextField()),
                ('covered_messages', models.PositiveIntegerField(default=0)),
                ('provider_id', models.CharField(blank=True, default='', max_length=100)),
                ('provider_type', models.CharField(blank=True, default='', max_length=50)),
                ('model', models.CharField(blank=True, default='', max_length=100)),
                ('route_fingerprint', models.CharField(blank=True, default='', max_length=64)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('conversation', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='compactions', to='conversations.conversation')),
                ('through_message', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='conversations.message')),
            ],
            options={
                'db_table': 'continuity_compaction',
                'ordering': ['conversation', '-id'],
            },
        ),
    ]
