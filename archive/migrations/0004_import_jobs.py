# Background imports: the job a `?background=true` import runs as, and the documents it stored.

import django.db.models.deletion
import uuid
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('archive', '0003_chatgpt_branches_and_attachments'),
    ]

    operations = [
        migrations.CreateModel(
            name='ImportJob',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('kind', models.CharField(max_length=20)),
                ('state', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('done', 'Done'), ('failed', 'Failed'), ('cancelled', 'Cancelled')], default='queued', max_length=10)),
                ('options', models.JSONField(blank=True, default=dict)),
                ('files', models.JSONField(blank=True, default=list)),
                ('total', models.PositiveIntegerField(blank=True, null=True)),
                ('done', models.PositiveIntegerField(default=0)),
                ('result', models.JSONField(blank=True, default=dict)),
                ('problems', models.JSONField(blank=True, default=list)),
                ('error', models.JSONField(blank=True, null=True)),
                ('runner', models.CharField(blank=True, default='', max_length=32)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
            ],
            options={
                'ordering': ['-created_at'],
                'indexes': [models.Index(fields=['state', '-created_at'], name='archive_import_job_state')],
            },
        ),
        migrations.AddField(
            model_name='archivedocument',
            name='import_job',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='documents', to='archive.importjob'),
        ),
    ]
