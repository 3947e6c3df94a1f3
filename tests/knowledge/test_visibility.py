"""`document_audience` and `document_visibility`: who may see a document, and why a user may not."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import pytest

from knowledge.models import Document, Environment, Principal
from knowledge.search import search_chunks
from knowledge.selectors.scopes import search_scope
from knowledge.selectors.visibility import VISIBILITY_CHECKS, document_audience, document_visibility
from knowledge.services.documents import document_soft_delete, document_upsert
from tests.factories import ConnectorFactory, EnvironmentFactory, GroupFactory, PrincipalFactory

pytestmark = pytest.mark.django_db


@dataclass
class World:
    docs: dict[str, Document]
    users: dict[str, Principal]
    groups: dict[str, Principal]
    envs: dict[str, Environment]


@pytest.fixture
def world() -> World:
    connector = ConnectorFactory.create()
    tenant = connector.tenant
    other = ConnectorFactory.create()
    envs = {slug: EnvironmentFactory.create(tenant=tenant, slug=slug) for slug in ("prod", "staging")}
    groups = {name: GroupFactory.create(tenant=tenant, external_id=name) for name in ("eng", "hr", "empty")}
    users = {
        "erin": PrincipalFactory.create(tenant=tenant, external_id="erin@example.com"),
        "hana": PrincipalFactory.create(tenant=tenant, external_id="hana@example.com"),
        "solo": PrincipalFactory.create(tenant=tenant, external_id="solo@example.com"),
        "outsider": PrincipalFactory.create(tenant=other.tenant, external_id="erin@example.com"),
    }
    users["erin"].groups.add(groups["eng"])
    users["hana"].groups.add(groups["hr"], groups["eng"])

    def doc(external_id: str, **options: Any) -> Document:
        return document_upsert(
            connector=connector,
            external_id=external_id,
            title=external_id,
            content=f"zebra {external_id}",
            **options,
        ).document

    docs = {
        "public": doc("public", is_public=True),
        "eng-prod": doc("eng-prod", principals=[groups["eng"]], environment=envs["prod"]),
        "hana-only": doc("hana-only", principals=[users["hana"]]),
        "nobody": doc("nobody", principals=[groups["empty"]]),
        "deleted": doc("deleted", is_public=True),
    }
    document_soft_delete(document=docs["deleted"])
    docs["deleted"].refresh_from_db()
    return World(docs, users, groups, envs)


def test_audience_lists_direct_users_groups_with_members_and_public(world: World) -> None:
    public = document_audience(document=world.docs["public"])
    assert public.everyone and public.users == [] and public.groups == []
    eng = document_audience(document=world.docs["eng-prod"])
    assert not eng.everyone and eng.users == []
    assert [(g.group, [m.external_id for m in g.members]) for g in eng.groups] == [
        (world.groups["eng"], ["erin@example.com", "hana@example.com"])
    ]
    assert document_audience(document=world.docs["hana-only"]).users == [world.users["hana"]]
    assert document_audience(document=world.docs["nobody"]).groups[0].members == []


def codes(world: World, doc: str, user: str | None, env: str | None = None) -> list[str]:
    verdict = document_visibility(
        document=world.docs[doc],
        user=world.users[user] if user else None,
        environment=world.envs[env] if env else None,
    )
    assert verdict.visible == (not verdict.reasons)
    assert all(reason.message for reason in verdict.reasons)
    return [reason.code for reason in verdict.reasons]


def test_each_reason_is_named(world: World) -> None:
    assert codes(world, "public", "solo") == []
    assert codes(world, "public", None) == []
    assert codes(world, "eng-prod", "erin") == []
    assert codes(world, "eng-prod", "solo") == ["acl"]
    assert codes(world, "eng-prod", None) == ["acl"]
    assert codes(world, "eng-prod", "erin", "staging") == ["environment"]
    assert codes(world, "eng-prod", "erin", "prod") == []
    assert codes(world, "public", "solo", "staging") == []  # no environment: seen from every environment
    assert codes(world, "hana-only", "hana") == []
    assert codes(world, "hana-only", "erin") == ["acl"]
    assert codes(world, "deleted", "erin") == ["deleted"]
    assert codes(world, "public", "outsider") == ["tenant"]
    assert codes(world, "eng-prod", "outsider", "staging") == ["tenant", "environment", "acl"]


def test_messages_say_what_to_look_at(world: World) -> None:
    verdict = document_visibility(document=world.docs["hana-only"], user=world.users["erin"])
    message = verdict.reasons[0].message
    assert "erin@example.com" in message and f"u:{world.users['hana'].pk} (hana@example.com)" in message
    assert f"{world.groups['eng'].acl_token} (group eng)" in message
    outsider = document_visibility(document=world.docs["public"], user=world.users["outsider"])
    assert world.users["outsider"].tenant.slug in outsider.reasons[0].message
    seen = document_visibility(document=world.docs["eng-prod"], user=world.users["hana"])
    assert seen.visible and seen.matching_tokens == [world.groups["eng"].acl_token]


def test_a_group_is_not_a_searcher(world: World) -> None:
    with pytest.raises(ValueError, match="group"):
        document_visibility(document=world.docs["public"], user=world.groups["eng"])


def test_reasons_are_an_extensible_list() -> None:
    assert [check.__name__ for check in VISIBILITY_CHECKS] == [
        "_tenant",
        "_deleted",
        "_environment",
        "_acl",
        "_override",
    ]


def test_the_verdict_agrees_with_the_search_itself(world: World) -> None:
    """For every user and environment, visible means the API's search returns the document."""
    tenant = world.docs["public"].tenant
    for user, env in itertools.product([*world.users.values(), None], [None, *world.envs.values()]):
        if user is not None and user.tenant_id != tenant.pk:
            continue  # another tenant's user searches its own tenant: covered by the tenant reason
        scope = search_scope(
            tenant=tenant,
            user_external_id=user.external_id if user else None,
            environment=env.slug if env else None,
        )
        found = {hit.document_id for hit in search_chunks(scope=scope, query_text="zebra", limit=50).hits}
        for doc in world.docs.values():
            verdict = document_visibility(document=doc, user=user, environment=env)
            assert verdict.visible == (doc.pk in found), (doc.external_id, user, env, verdict.reasons)


def test_an_admin_override_that_narrowed_the_acl_is_named(world: World) -> None:
    from knowledge.services.documents import document_set_acl

    document = world.docs["eng-prod"]
    document_set_acl(document=document, is_public=False, principals=[world.users["hana"]], actor="admin:ann")
    document.refresh_from_db()
    verdict = document_visibility(document=document, user=world.users["erin"])
    assert [r.code for r in verdict.reasons] == ["acl", "override"]
    assert "admin:ann" in verdict.reasons[1].message and "group eng" in verdict.reasons[1].message
    assert document_visibility(document=document, user=world.users["hana"]).visible
