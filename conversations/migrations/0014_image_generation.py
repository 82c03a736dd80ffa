"""Image generation (issue 22): the Settings switch (off by default), and what a generated
image's attachment says about itself: `generated`, and the saved character whose image
guidance went into its prompt (`generated_character`, cleared when the character is deleted)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("conversations", "0013_send_reads_by_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="assistantsettings",
            name="image_generation",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="attachment",
            name="generated",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="attachment",
            name="generated_character",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="generated_images",
                to="conversations.character",
            ),
        ),
    ]
