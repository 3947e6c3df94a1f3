"""`seed_demo` (run by `make run`): re-running it is safe, and a moved checkout's demo folder follows it."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from knowledge.management.commands.seed_demo import HANDBOOK
from knowledge.models import Connector, Document

pytestmark = pytest.mark.django_db


def test_a_moved_checkout_points_the_demo_folder_at_its_own_handbook() -> None:
    call_command("seed_demo", verbosity=0)
    folder = Connector.objects.get(tenant__slug="primary", name="handbook-folder")
    documents = Document.objects.filter(connector=folder).count()
    assert folder.config == {"path": str(HANDBOOK)} and documents > 0
    Connector.objects.filter(pk=folder.pk).update(config={"path": "/old/clone/knowledge/demo_data/handbook"})
    call_command("seed_demo", verbosity=0)
    folder.refresh_from_db()
    assert folder.config == {"path": str(HANDBOOK)}
    assert Document.objects.filter(connector=folder, deleted_at=None).count() == documents
    urls = set(Document.objects.filter(connector=folder).values_list("source_url", flat=True))
    assert all(url.startswith(f"file://{HANDBOOK}") for url in urls), urls


def test_an_admin_chosen_folder_is_left_alone() -> None:
    call_command("seed_demo", verbosity=0)
    Connector.objects.filter(name="handbook-folder").update(config={"path": "/srv/our-wiki"})
    call_command("seed_demo", verbosity=0)
    assert Connector.objects.get(name="handbook-folder").config == {"path": "/srv/our-wiki"}
