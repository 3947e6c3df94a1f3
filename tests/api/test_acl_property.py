"""Property: a search returns exactly the documents its caller may see (ACLs, groups, environments, deletes),
and a key bound to the caller lists exactly the documents the caller may see.

The corpus is small (< 50 chunks) and every document contains the query's words, so every visible chunk is a
keyword-lane candidate at top_k=100: the result set must equal the brute-force allowed set.
Examples: 200 by default, more with ACL_PROPERTY_EXAMPLES=<n>.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knowledge.access.principals import principals_resolve
from knowledge.models import ApiKey, Document, Environment, Principal, Tenant
from knowledge.search import search_chunks
from knowledge.selectors.documents import document_list
from knowledge.selectors.identity import principal_ids
from knowledge.selectors.scopes import search_scope_for_key
from knowledge.services.api_indexing import api_connector
from knowledge.services.documents import document_set_acl, document_soft_delete, document_upsert

EXAMPLES = int(os.environ.get("ACL_PROPERTY_EXAMPLES", "200"))
QUERY = "harbour ferry timetable"
UNKNOWN_USER = -1
_tenant_numbers = itertools.count()
SPELLINGS = {
    "as-is": lambda email: email,
    "upper": str.upper,
    "padded": lambda email: f"  {email}\t",
    "mixed": lambda email: email[:1].upper() + email[1:].replace("@example", "@Example"),
    "full-width": lambda email: email.replace("user", "ｕｓｅｒ"),
}


@dataclass(frozen=True)
class DocSpec:
    public: bool
    users: frozenset[int]
    groups: frozenset[int]
    environment: int | None
    deleted: bool
    acl_changed_later: bool


@dataclass(frozen=True)
class World:
    users: int
    groups: int
    environments: int
    memberships: frozenset[tuple[int, int]]
    docs: tuple[DocSpec, ...]
    caller: int | None  # a user index, UNKNOWN_USER, or None for a key without identity
    caller_is_fixed_principal: bool
    environment_filter: int | None
    bypass: bool
    spelling: str  # how the caller's e-mail is written in the request (knowledge/names.py makes it one)


def _indexes(n: int) -> st.SearchStrategy[frozenset[int]]:
    return st.frozensets(st.integers(0, n - 1), max_size=n) if n else st.just(frozenset())


def _optional_index(n: int) -> st.SearchStrategy[int | None]:
    return st.one_of(st.none(), st.integers(0, n - 1)) if n else st.none()


@st.composite
def worlds(draw: st.DrawFn) -> World:
    users, groups, environments = draw(st.integers(1, 4)), draw(st.integers(0, 3)), draw(st.integers(0, 2))
    pairs = st.tuples(st.integers(0, users - 1), st.integers(0, groups - 1)) if groups else st.nothing()
    doc = st.builds(
        DocSpec,
        public=st.booleans(),
        users=_indexes(users),
        groups=_indexes(groups),
        environment=_optional_index(environments),
        deleted=st.booleans(),
        acl_changed_later=st.booleans(),
    )
    caller = draw(st.one_of(st.none(), st.just(UNKNOWN_USER), st.integers(0, users - 1)))
    return World(
        users=users,
        groups=groups,
        environments=environments,
        memberships=draw(st.frozensets(pairs, max_size=users * groups)),
        docs=tuple(draw(st.lists(doc, min_size=1, max_size=8))),
        caller=caller,
        caller_is_fixed_principal=caller is not None and caller >= 0 and draw(st.booleans()),
        environment_filter=draw(_optional_index(environments)),
        bypass=draw(st.booleans()),
        spelling=draw(st.sampled_from(sorted(SPELLINGS))),
    )


def visible(world: World, doc: DocSpec) -> bool:
    """The brute-force rule: not deleted, in the filtered environment (or none), and allowed by the ACL."""
    if doc.deleted:
        return False
    if world.environment_filter is not None and doc.environment not in (None, world.environment_filter):
        return False
    if world.bypass or doc.public:
        return True
    if world.caller is None or world.caller == UNKNOWN_USER:
        return False
    caller_groups = {g for u, g in world.memberships if u == world.caller}
    return world.caller in doc.users or bool(caller_groups & doc.groups)


@dataclass
class Built:
    tenant: Tenant
    users: list[Principal]
    environments: list[Environment]
    documents: list[Document]


def build(world: World) -> Built:
    tenant = Tenant.objects.create(slug=f"acl-{next(_tenant_numbers)}", name="ACL property")
    users = Principal.objects.bulk_create(
        Principal(tenant=tenant, kind=Principal.Kind.USER, external_id=f"user{i}@example.com")
        for i in range(world.users)
    )
    groups = Principal.objects.bulk_create(
        Principal(tenant=tenant, kind=Principal.Kind.GROUP, external_id=f"group-{i}")
        for i in range(world.groups)
    )
    Principal.groups.through.objects.bulk_create(
        Principal.groups.through(from_principal=users[u], to_principal=groups[g])
        for u, g in world.memberships
    )
    environments = Environment.objects.bulk_create(
        Environment(tenant=tenant, slug=f"env-{i}", name=f"Env {i}") for i in range(world.environments)
    )
    connector = api_connector(tenant=tenant)
    documents = []
    for i, spec in enumerate(world.docs):
        principals = granted(world, tenant, spec)
        document = document_upsert(
            connector=connector,
            external_id=f"doc-{i}",
            content=f"{QUERY} number {i}",
            environment=environments[spec.environment] if spec.environment is not None else None,
            is_public=not spec.public if spec.acl_changed_later else spec.public,
            principals=[] if spec.acl_changed_later else principals,
        ).document
        if spec.acl_changed_later:
            document_set_acl(document=document, is_public=spec.public, principals=principals)
        if spec.deleted:
            document_soft_delete(document=document)
        documents.append(document)
    return Built(tenant, users, environments, documents)


def granted(world: World, tenant: Tenant, spec: DocSpec) -> list[Principal]:
    """The document's principals, named as a source might spell them (resolved by canonical name)."""
    spell = SPELLINGS[world.spelling]
    keys = [("user", spell(f"user{u}@example.com")) for u in sorted(spec.users)]
    keys += [("group", f" group-{g}  ") for g in sorted(spec.groups)]
    ids = principals_resolve(tenant=tenant, keys=keys)
    assert Principal.objects.filter(tenant=tenant).count() == world.users + world.groups, (
        "a spelling made a new one"
    )
    return list(Principal.objects.filter(pk__in=ids.values()))


def search_as_caller(world: World, built: Built) -> set[int]:
    fixed = (
        built.users[world.caller] if world.caller_is_fixed_principal and world.caller is not None else None
    )
    key = ApiKey(tenant=built.tenant, principal=fixed, on_behalf_of=True, bypass_acl=True)
    on_behalf_of = None
    if world.caller is not None and not world.caller_is_fixed_principal:
        on_behalf_of = SPELLINGS[world.spelling](
            "stranger@example.com" if world.caller == UNKNOWN_USER else f"user{world.caller}@example.com"
        )
    env = world.environment_filter
    scope = search_scope_for_key(
        key=key,
        environment=built.environments[env].slug if env is not None else None,
        on_behalf_of=on_behalf_of,
        bypass_acl=world.bypass,
    )
    return {hit.document_id for hit in search_chunks(scope=scope, query_text=QUERY, limit=100).hits}


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(world=worlds())
def test_search_returns_exactly_the_allowed_documents(db: None, world: World) -> None:
    built = build(world)
    found = search_as_caller(world, built)
    allowed = {doc.pk for doc, spec in zip(built.documents, world.docs, strict=True) if visible(world, spec)}
    assert found <= allowed, "a result the caller may not see"
    assert found == allowed, "an allowed document is missing"
    if world.caller_is_fixed_principal and world.caller is not None:
        user = built.users[world.caller]
        ids = principal_ids(tenant=built.tenant, user_external_id=user.external_id)
        listed = set(document_list(tenant=built.tenant, visible_to=ids).values_list("pk", flat=True))
        listable = {
            d.pk for d, spec in zip(built.documents, world.docs, strict=True) if listable_by(world, spec)
        }
        assert listed == listable, (
            "GET /documents with a user-bound key lists other than what the user may see"
        )


def listable_by(world: World, doc: DocSpec) -> bool:
    """What a key bound to the caller lists: `visible` without environment filter or bypass."""
    caller_groups = {g for u, g in world.memberships if u == world.caller}
    return not doc.deleted and (doc.public or world.caller in doc.users or bool(caller_groups & doc.groups))
