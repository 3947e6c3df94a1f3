"""Eval corpora's fingerprints get their own table; they were kept in the api connector's config,
which an api connector may not have (the admin could not save such a connector)."""

from typing import Any

import django.db.models.deletion
from django.db import migrations, models

FINGERPRINT = ("corpus_hash", "embedder", "chunker", "documents")


def move_fingerprints(apps: Any, schema_editor: Any) -> None:
    Connector = apps.get_model("knowledge", "Connector")
    EvalCorpus = apps.get_model("knowledge", "EvalCorpus")
    for connector in Connector.objects.filter(name="evals-corpus", kind="api"):
        found = {k: connector.config.get(k) for k in FINGERPRINT if connector.config.get(k) is not None}
        EvalCorpus.objects.update_or_create(connector=connector, defaults=found)
        connector.config = {k: v for k, v in connector.config.items() if k not in FINGERPRINT}
        connector.save(update_fields=["config"])


class Migration(migrations.Migration):
    dependencies = [
        ("knowledge", "0022_document_policies"),
    ]

    operations = [
        migrations.CreateModel(
            name="EvalCorpus",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("corpus_hash", models.CharField(blank=True, max_length=64)),
                ("embedder", models.CharField(blank=True, max_length=200)),
                ("chunker", models.CharField(blank=True, max_length=200)),
                ("documents", models.PositiveIntegerField(default=0)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "connector",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="eval_corpus",
                        to="knowledge.connector",
                    ),
                ),
            ],
            options={
                "verbose_name_plural": "eval corpora",
            },
        ),
        migrations.RunPython(move_fingerprints, migrations.RunPython.noop),
    ]
