"""The search playground: a staff form for the API's search scope, and what each hit looks like there."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from django import forms
from django.urls import reverse

from knowledge.models import Connector, Document, Environment, Principal, SearchAudit, Tenant
from knowledge.pages.highlight import Segment, snippet
from knowledge.pages.permissions import SEARCH_AS_USER, SEARCH_BYPASS_ACL, allowed
from knowledge.search import SearchHit, search_chunks
from knowledge.search.disclosure import disclosed
from knowledge.selectors.scopes import search_scope
from knowledge.services.audit import search_record

logger = logging.getLogger("knowledge.pages.access")
PUBLIC, BYPASS = "public", "bypass"
DEFAULT_TOP_K, MAX_TOP_K = 10, 100


class TenantTagged:
    """Options carry `data-tenant`, so the page's script can hide other tenants' choices."""

    tenant_of: dict[str, str]

    def create_option(self, name: str, value: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        option: dict[str, Any] = super().create_option(name, value, *args, **kwargs)  # type: ignore[misc]
        instance = getattr(value, "instance", None)
        tenant = instance.tenant.slug if instance is not None else self.tenant_of.get(str(value))
        if tenant:
            option["attrs"]["data-tenant"] = tenant
        return option


class TaggedSelect(TenantTagged, forms.Select):
    tenant_of: dict[str, str] = {}


class TaggedSelectMultiple(TenantTagged, forms.SelectMultiple):
    tenant_of: dict[str, str] = {}


class TenantChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Tenant) -> str:
        return obj.slug


class ConnectorChoiceField(forms.ModelMultipleChoiceField):
    def label_from_instance(self, obj: Connector) -> str:
        return f"{obj.name} ({obj.tenant.slug})"


class EnvironmentChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Environment) -> str:
        return f"{obj.slug} ({obj.tenant.slug})"


@dataclass(frozen=True)
class IdentityPermissions:
    """Which identities a staff user may search as, besides public only."""

    as_user: bool = False
    bypass: bool = False


def identity_permissions(user: Any) -> IdentityPermissions:
    return IdentityPermissions(as_user=user.has_perm(SEARCH_AS_USER), bypass=user.has_perm(SEARCH_BYPASS_ACL))


def identity_allowed(value: str, user: Any) -> bool:
    """Whether the user may search as the identity named in the URL (logged when it needs a permission)."""
    if value == BYPASS:
        return allowed(user, SEARCH_BYPASS_ACL, "search bypassing ACLs")
    if value.startswith("user:"):
        return allowed(user, SEARCH_AS_USER, "search as another user")
    return True


def identity_choices(may: IdentityPermissions) -> list[tuple[str, Any]]:
    choices: list[tuple[str, Any]] = [(PUBLIC, "Public only (no user)")]
    if may.bypass:
        choices.append((BYPASS, "Bypass ACLs (everything in the tenant)"))
    if may.as_user:
        users = Principal.objects.filter(kind=Principal.Kind.USER).select_related("tenant")
        choices.append(("Users", [(f"user:{u.pk}", f"{u.external_id} ({u.tenant.slug})") for u in users]))
    return choices


class PlaygroundForm(forms.Form):
    """GET parameters of /playground/; every choice is checked against the chosen tenant."""

    tenant = TenantChoiceField(
        queryset=Tenant.objects.order_by("slug"), to_field_name="slug", empty_label=None
    )
    identity = forms.ChoiceField(label="Search as", widget=TaggedSelect)
    connectors = ConnectorChoiceField(
        queryset=Connector.objects.select_related("tenant").order_by("tenant__slug", "name"),
        required=False,
        widget=TaggedSelectMultiple,
        help_text="None selected: every connector of the tenant.",
    )
    environment = EnvironmentChoiceField(
        queryset=Environment.objects.select_related("tenant").order_by("tenant__slug", "slug"),
        required=False,
        widget=TaggedSelect,
        empty_label="(every environment)",
    )
    top_k = forms.IntegerField(
        label="top_k", min_value=1, max_value=MAX_TOP_K, initial=DEFAULT_TOP_K, required=False
    )
    q = forms.CharField(label="Query", max_length=2000, strip=True)

    def __init__(self, *args: Any, may: IdentityPermissions | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        may = may or IdentityPermissions()
        field = self.fields["identity"]
        assert isinstance(field, forms.ChoiceField) and isinstance(field.widget, TaggedSelect)
        field.choices = identity_choices(may)
        field.widget = TaggedSelect(choices=field.choices)
        if may.as_user:
            users = Principal.objects.filter(kind=Principal.Kind.USER).values_list("pk", "tenant__slug")
            field.widget.tenant_of = {f"user:{pk}": slug for pk, slug in users}

    def clean_top_k(self) -> int:
        value: int | None = self.cleaned_data["top_k"]
        return DEFAULT_TOP_K if value is None else value

    def clean_identity(self) -> Principal | str:
        value: str = self.cleaned_data["identity"]
        if value in (PUBLIC, BYPASS):
            return value
        user = Principal.objects.select_related("tenant").filter(pk=int(value.removeprefix("user:"))).first()
        if user is None:
            raise forms.ValidationError("that user no longer exists")
        return user

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        tenant: Tenant | None = data.get("tenant")
        if tenant is not None:
            for name, owner, message in _owners(data):
                if owner != tenant.pk:
                    self.add_error(name, message)
        return data


def _owners(data: dict[str, Any]) -> list[tuple[str, int, str]]:
    """(field, tenant id, complaint) of each chosen user, connector and environment."""
    found = []
    user = data.get("identity")
    if isinstance(user, Principal):
        found.append(
            ("identity", user.tenant_id, f"{user.external_id} is a user of tenant {user.tenant.slug!r}")
        )
    for c in data.get("connectors") or ():
        found.append(("connectors", c.tenant_id, f"connector {c.name!r} is of tenant {c.tenant.slug!r}"))
    env = data.get("environment")
    if env is not None:
        found.append(
            ("environment", env.tenant_id, f"environment {env.slug!r} is of tenant {env.tenant.slug!r}")
        )
    return found


@dataclass(frozen=True)
class PlaygroundHit:
    """A hit as the playground shows it: citation, highlighted snippet and the fusion inputs."""

    rank: int
    hit: SearchHit
    external_id: str
    snippet: list[Segment]
    admin_url: str
    source_link: str | None  # only http(s) URLs become links; others are shown as text


@dataclass
class PlaygroundOutcome:
    hits: list[PlaygroundHit]
    warnings: list[str]
    lanes: dict[str, int]
    milliseconds: float
    trace: list[Any] = field(default_factory=list)  # each stage's record (the configured pipeline)


def _link(url: str) -> str | None:
    return url if urlsplit(url).scheme in ("http", "https") else None


def _may_bypass(identity: Any, actor: Any) -> bool:
    """Whether this search bypasses the ACLs, or its staff user may (keyword scores are shown then)."""
    return identity == BYPASS or bool(actor is not None and actor.has_perm(SEARCH_BYPASS_ACL))


def playground_search(*, data: dict[str, Any], actor: Any = None) -> PlaygroundOutcome:
    """Build the scope as the API does for this identity, run the API's search, shape the hits."""
    identity = data["identity"]
    logger.info(
        "playground search by %s: tenant %s as %s",
        getattr(actor, "username", "") or "unknown",
        data["tenant"].slug,
        identity.external_id if isinstance(identity, Principal) else identity,
    )
    scope = search_scope(
        tenant=data["tenant"],
        user_external_id=identity.external_id if isinstance(identity, Principal) else None,
        bypass_acl=identity == BYPASS,
        environment=data["environment"].slug if data.get("environment") else None,
        connector_ids=[c.pk for c in data["connectors"]] or None,
    )
    started = time.perf_counter()
    result = search_chunks(scope=scope, query_text=data["q"], limit=data["top_k"], trace=True)
    milliseconds = (time.perf_counter() - started) * 1000
    search_record(
        tenant_id=data["tenant"].pk,
        actor=SearchAudit.Actor.STAFF,
        staff_user=getattr(actor, "username", "") or "unknown",
        principal=identity.external_id if isinstance(identity, Principal) else "",
        query=data["q"],
        filters={
            "top_k": data["top_k"],
            "bypass_acl": identity == BYPASS,
            **({"environment": data["environment"].slug} if data.get("environment") else {}),
            **({"connector_ids": sorted(c.pk for c in data["connectors"])} if data["connectors"] else {}),
        },
        document_ids=[hit.document_id for hit in result.hits],
    )
    ids = dict(
        Document.objects.filter(pk__in={h.document_id for h in result.hits}).values_list("pk", "external_id")
    )
    hits = [
        PlaygroundHit(
            rank=rank,
            hit=hit,
            external_id=ids.get(hit.document_id, ""),
            snippet=snippet(hit.content, data["q"]),
            admin_url=reverse("admin:knowledge_document_change", args=[hit.document_id]),
            source_link=_link(hit.source_url),
        )
        for rank, hit in enumerate(disclosed(result.hits, bypass_acl=_may_bypass(identity, actor)), start=1)
    ]
    return PlaygroundOutcome(hits, result.warnings, result.lanes, milliseconds, result.trace or [])
