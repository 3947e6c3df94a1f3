"""Loads a small demo knowledge base: two tenants, connectors, principals, ACL'd documents, environments."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from knowledge.models import ApiKey, Connector, Document, Environment, Principal, Tenant
from knowledge.services.connector_sync import connector_sync
from knowledge.services.connectors import connector_ensure, connector_update
from knowledge.services.documents import document_set_acl, document_upsert
from knowledge.services.jobs import job_run, job_submit
from knowledge.source_stubs import demo as demo_sources
from knowledge.source_stubs.server import serving

DEMO_BATCH: list[dict[str, Any]] = [
    {
        "id": "onboarding/first-week",
        "title": "Your first week at Acme",
        "content": "On your first day IT hands out laptops; badges are collected at the front desk.",
        "acl": {"public": True},
    },
    {
        "id": "onboarding/buddy",
        "title": "Onboarding buddies",
        "content": "Every new hire gets an onboarding buddy from another team for the first month.",
        "acl": {"public": True},
    },
]
HANDBOOK = Path(__file__).resolve().parents[2] / "demo_data" / "handbook"

DOCS: dict[str, list[dict[str, Any]]] = {
    "primary": [
        {
            "id": "handbook/vacation",
            "title": "Vacation policy",
            "content": "# Vacation policy\nEmployees get 25 days of paid vacation per year.\n\n"
            "## Carry-over\nUp to five unused days carry over to the next year.",
            "public": True,
        },
        {
            "id": "eng/oncall",
            "title": "On-call runbook",
            "content": "# On-call\nThe on-call engineer answers pages within 15 minutes.\n\n"
            "## Escalation\nEscalate database outages to the platform team lead.",
            "groups": ["engineering"],
            "env": "production",
        },
        {
            "id": "eng/staging-db",
            "title": "Staging database credentials rotation",
            "content": "Staging database passwords rotate every Monday at 09:00 UTC.",
            "groups": ["engineering"],
            "env": "staging",
        },
        {
            "id": "hr/salaries",
            "title": "Salary bands 2026",
            "content": "Salary bands are reviewed every January by the HR committee.",
            "users": ["hana@example.com"],
        },
    ],
    "acme": [
        {
            "id": "handbook/vacation",
            "title": "Acme leave rules",
            "content": "Acme staff receive 30 days of leave; requests go through the leave portal.",
            "public": True,
        },
        {
            "id": "sales/pricing",
            "title": "Pricing playbook",
            "content": "Enterprise discounts above 20% need approval from the sales director.",
            "groups": ["sales"],
        },
    ],
}


def demo_api_key(path: Path) -> str:
    """The demo key kept in `path` if it still works, else a new one written there (mode 600)."""
    if path.exists():
        plain = path.read_text().strip()
        parts = plain.split("_", 2)
        key = ApiKey.objects.filter(lookup_id=parts[1] if len(parts) == 3 else "", revoked_at=None).first()
        if key is not None and key.matches(plain):
            return plain
    _, plain = ApiKey.issue(
        tenant=Tenant.objects.get(slug="primary"),
        name="demo",
        scopes=["search", "index"],
        on_behalf_of=True,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(plain)
    path.chmod(0o600)
    return plain


PEOPLE = {
    "primary": {"engineering": ["erin@example.com", "eli@example.com"], "hr": ["hana@example.com"]},
    "acme": {"sales": ["sam@acme.example"]},
}


class Command(BaseCommand):
    help = "Load the demo knowledge base (idempotent: re-running changes nothing)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--api-key-file",
            default=None,
            help="keep a demo API key (tenant primary, search+index, on_behalf_of) here and print it",
        )
        parser.add_argument(
            "--without-hosted",
            action="store_true",
            help="leave out the hosted connectors' recorded syncs (Confluence, Google Drive, GitHub, Slack)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        for slug, docs in DOCS.items():
            with transaction.atomic():
                self._seed_tenant(slug, docs)
            if slug == Tenant.DEFAULT_SLUG and not options["without_hosted"]:
                for source in demo_sources.SOURCES:
                    _seed_hosted(Tenant.objects.get(slug=slug), source)
            count = Document.objects.filter(tenant__slug=slug).count()
            self.stdout.write(f"tenant {slug}: {count} documents")
        self._seed_job()
        if options["api_key_file"]:
            self.stdout.write(f"demo API key (tenant primary): {demo_api_key(Path(options['api_key_file']))}")

    def _seed_tenant(self, slug: str, docs: list[dict[str, Any]]) -> int:
        tenant, _ = Tenant.objects.get_or_create(slug=slug, defaults={"name": slug.title()})
        envs = {
            s: Environment.objects.get_or_create(tenant=tenant, slug=s, defaults={"name": s.title()})[0]
            for s in ("production", "staging")
        }
        connector, _ = connector_ensure(tenant=tenant, name="api", kind=Connector.Kind.API)
        principals: dict[str, Principal] = {}
        for group_name, members in PEOPLE[slug].items():
            group, _ = Principal.objects.get_or_create(
                tenant=tenant, kind="group", external_id=group_name, defaults={"display_name": group_name}
            )
            principals[group_name] = group
            for email in members:
                user, _ = Principal.objects.get_or_create(tenant=tenant, kind="user", external_id=email)
                user.groups.add(group)
                principals[email] = user
        for doc in docs:
            document_upsert(
                connector=connector,
                external_id=doc["id"],
                title=doc["title"],
                content=doc["content"],
                is_public=doc.get("public", False),
                environment=envs.get(doc.get("env", "")),
                principals=[principals[p] for p in doc.get("groups", []) + doc.get("users", [])],
            )
        if slug == Tenant.DEFAULT_SLUG:
            self._seed_folder(tenant)
        return len(docs)

    def _seed_job(self) -> None:
        """A finished batch job (as `POST /api/v1/index/batch` makes), so the admin's job page has one;
        its Idempotency-Key makes a re-run replay it instead of adding another."""
        tenant = Tenant.objects.get(slug="acme")
        submitted = job_submit(tenant=tenant, documents=DEMO_BATCH, idempotency_key="demo-onboarding-batch")
        if not submitted.job.finished:
            job_run(job_id=submitted.job.pk)
        self.stdout.write(f"ingest job {submitted.job.pk}: {len(DEMO_BATCH)} documents (batch API demo)")

    def _seed_folder(self, tenant: Tenant) -> None:
        """A filesystem connector over the demo handbook (public by default; `security/` has an ACL
        file for the engineering group), synced once now and hourly by the worker."""
        path = str(HANDBOOK)
        connector, created = connector_ensure(
            tenant=tenant,
            name="handbook-folder",
            kind=Connector.Kind.FILESYSTEM,
            config={"path": path},
            default_is_public=True,
        )
        if not created and _stale_demo_path(connector.config.get("path"), path):
            connector = connector_update(
                connector=connector, config={"path": path}, enabled=True, default_is_public=True
            )
        if connector.enabled and connector.config.get("path") == path:
            connector_sync(connector=connector)
            _seed_admin_decision(connector)


def _seed_hosted(tenant: Tenant, source: demo_sources.DemoSource) -> None:
    """A hosted connector with one recorded sync, read from a local stub of its API that answers only
    for this command: the admin shows its run, documents and source groups, the playground its ACLs.
    It is left disabled (nothing answers at that address later); point it at a real site to use it."""
    if Connector.objects.filter(tenant=tenant, name=source.name).exists():
        return
    with serving(source.stub()) as server:
        connector, _ = connector_ensure(
            tenant=tenant, name=source.name, kind=source.kind, config=source.config(server.url)
        )
        connector.set_credential(source.credential(server.url))
        connector.save(update_fields=["credential_sealed"])
        connector_sync(connector=connector)
    connector_update(connector=connector, enabled=False)


def _seed_admin_decision(connector: Connector) -> None:
    """An admin's ACL override of one handbook page (engineering only), kept by its source id: the
    document policies' list shows it, and it survives the page leaving the folder and coming back."""
    document = Document.objects.filter(connector=connector, external_id="remote-work.md").first()
    engineering = Principal.objects.filter(
        tenant_id=connector.tenant_id, kind="group", external_id="engineering"
    )
    if document is not None and not document.acl_overridden and engineering.exists():
        document_set_acl(document=document, is_public=False, principals=list(engineering), actor="admin:demo")


def _stale_demo_path(configured: object, current: str) -> bool:
    """The old demo's placeholder, or the demo handbook of a checkout that has moved since."""
    if configured == "/srv/handbook":
        return True
    suffix = "/knowledge/demo_data/handbook"
    return isinstance(configured, str) and configured.endswith(suffix) and configured != current
