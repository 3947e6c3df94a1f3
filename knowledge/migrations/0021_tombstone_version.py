"""Tombstones carry a version above the deleted document's last one, so an index applies the deletion
over any push of an older state that lands after it."""

from django.db import migrations, models

from knowledge.sql import sql


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0020_staff_page_permissions")]

    operations = [
        migrations.AddField(
            model_name="indextombstone",
            name="version",
            field=models.BigIntegerField(db_default=0, default=0),
        ),
        migrations.RunSQL(sql("document_tombstone", 2), sql("document_tombstone", 1)),
    ]
