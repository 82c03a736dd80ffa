"""A job keeps what the export offers (custom instructions, memory suggestions) in `offers`, written once,
apart from the counts in `result` that each conversation's progress write rewrites.

Existing jobs have those keys in `result`; they move to `offers`, so a job resumed after the upgrade
still offers them.
"""

from django.db import migrations, models

OFFER_KEYS = ("custom_instructions_suggestion", "memory_suggestions", "memories_problem")


def offers_move(apps, schema_editor):
    ImportJob = apps.get_model("archive", "ImportJob")
    for job in ImportJob.objects.only("pk", "result"):
        result = job.result if isinstance(job.result, dict) else {}
        offers = {key: result.pop(key) for key in OFFER_KEYS if key in result}
        if offers:
            ImportJob.objects.filter(pk=job.pk).update(result=result, offers=offers)


def offers_back(apps, schema_editor):
    ImportJob = apps.get_model("archive", "ImportJob")
    for job in ImportJob.objects.only("pk", "result", "offers"):
        if job.offers:
            ImportJob.objects.filter(pk=job.pk).update(result={**job.result, **job.offers})


class Migration(migrations.Migration):
    dependencies = [
        ("archive", "0005_document_source_claude"),
    ]

    operations = [
        migrations.AddField(
            model_name="importjob",
            name="offers",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.RunPython(offers_move, offers_back),
    ]
