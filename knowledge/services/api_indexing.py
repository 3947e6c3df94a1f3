"""Indexing through the API: resolves the tenant's push connector, environment and ACL principals."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from knowledge.models import Connector, Principal, Tenant
from knowledge.selectors.scopes import environment_by_slug
from knowledge.services.documents import UpsertResult, document_upsert

API_CONNECTOR_NAME = "api"


def api_connector(*, tenant: Tenant) -> Connector:
    """The tenant's push connector that API-indexed documents belong to (created on first use)."""
    try:
        with transaction.atomic():
            connector, _ = Connector.objects.get_or_create(
                tenant=tenant, name=API_CONNECTOR_NAME, defaults={"kind": Connector.Kind.API}
            )
    except IntegrityError:  # created concurrently
        connector = Connector.objects.get(tenant=tenant, name=API_CONNECTOR_NAME)
    return connector


def acl_principals(*, tenant: Tenant, users: Sequence[str], groups: Sequence[str]) -> list[Principal]:
    """Principals named by an ACL; unknown ones are created so access applies once they appear."""
    found: list[Principal] = []
    for kind, names in ((Principal.Kind.USER, users), (Principal.Kind.GROUP, groups)):
        for name in dict.fromkeys(names):
            principal, _ = Principal.objects.get_or_create(tenant=tenant, kind=kind, external_id=name)
            found.append(principal)
    return found


def api_document_index(*, tenant: Tenant, data: dict[str, Any]) -> UpsertResult:
    """Upsert one document from a validated /index body."""
    acl = data.get("acl") or {}
    connector = api_connector(tenant=tenant)
    return document_upsert(
        connector=connector,
        external_id=data["id"],
        content=data["content"],
        title=data.get("title", ""),
        source_url=data.get("source_url", ""),
        metadata=data.get("metadata") or {},
        language=data.get("language") or settings.KNOWLEDGE_DEFAULT_LANGUAGE,
        environment=environment_by_slug(tenant=tenant, slug=data.get("environment")),
        is_public=acl.get("public", False),
        principals=acl_principals(tenant=tenant, users=acl.get("users", []), groups=acl.get("groups", [])),
        embedding=data.get("embedding"),
    )
