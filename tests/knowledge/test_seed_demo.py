"""`seed_demo` (run by `make run`): re-running it is safe, a moved checkout's demo folder follows it,
and each hosted connector kind has a recorded sync whose source ACLs search follows."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from knowledge.management.commands.seed_demo import HANDBOOK
from knowledge.models import Connector, Document, SyncRun
from knowledge.source_stubs import demo as demo_sources
from tests.knowledge.sources.helpers import live, visible

pytestmark = pytest.mark.django_db


def test_a_moved_checkout_points_the_demo_folder_at_its_own_handbook() -> None:
    call_command("seed_demo", verbosity=0, without_hosted=True)
    folder = Connector.objects.get(tenant__slug="primary", name="handbook-folder")
    documents = Document.objects.filter(connector=folder).count()
    assert folder.config == {"path": str(HANDBOOK)} and documents > 0
    Connector.objects.filter(pk=folder.pk).update(config={"path": "/old/clone/knowledge/demo_data/handbook"})
    call_command("seed_demo", verbosity=0, without_hosted=True)
    folder.refresh_from_db()
    assert folder.config == {"path": str(HANDBOOK)}
    assert Document.objects.filter(connector=folder, deleted_at=None).count() == documents
    urls = set(Document.objects.filter(connector=folder).values_list("source_url", flat=True))
    assert all(url.startswith(f"file://{HANDBOOK}") for url in urls), urls


def test_an_admin_chosen_folder_is_left_alone() -> None:
    call_command("seed_demo", verbosity=0, without_hosted=True)
    Connector.objects.filter(name="handbook-folder").update(config={"path": "/srv/our-wiki"})
    call_command("seed_demo", verbosity=0, without_hosted=True)
    assert Connector.objects.get(name="handbook-folder").config == {"path": "/srv/our-wiki"}


def test_each_hosted_kind_has_one_recorded_sync_whose_acls_search_follows() -> None:
    call_command("seed_demo", verbosity=0)
    call_command("seed_demo", verbosity=0)  # a re-run records nothing more
    hosted = Connector.objects.filter(tenant__slug="primary", kind__in=[s.kind for s in demo_sources.SOURCES])
    assert sorted(hosted.values_list("kind", flat=True)) == ["confluence", "github", "google_drive", "slack"]
    for connector in hosted:
        runs = list(SyncRun.objects.filter(connector=connector))
        assert [(r.status, r.errors) for r in runs] == [("ok", 0)], (connector.name, runs[0].error_text)
        assert not connector.enabled and live(connector), connector.name
    wiki, slack = hosted.get(kind="confluence"), hosted.get(kind="slack")
    assert visible(wiki, demo_sources.ERIN, "failover drill") == {"page:100", "page:101"}
    assert visible(wiki, demo_sources.HANA, "performance review salary") == {"page:200"}
    assert visible(wiki, demo_sources.ELI, "failover drill") == {"page:100"}
    assert visible(slack, demo_sources.HANA, "salary band letters") == {
        d for d in live(slack) if d.startswith("day:C2:")
    }
    assert not any(d.startswith("day:C2:") for d in visible(slack, demo_sources.ERIN, "salary band letters"))
    repo = hosted.get(kind="github")
    assert visible(repo, demo_sources.ELI, "deploy freeze") == live(repo)
    assert visible(repo, demo_sources.HANA, "deploy freeze") == set()
    drive = hosted.get(kind="google_drive")
    assert visible(drive, demo_sources.ELI, "hiring plan expenses") == {"file:expenses"}
    assert visible(drive, demo_sources.ERIN, "hiring plan expenses") == {"file:expenses", "file:hiring"}
