"""Stateful property: whatever mix of write paths runs, search returns exactly what each persona may see.

The rules drive every write path the product has: API upserts (the REST endpoint, in the request
and as a batch job), a filesystem
connector synced over a folder whose files and ACL sidecar change between steps, admin ACL edits,
content edits, override clears, soft deletes, restores and deletes (the real admin forms and
actions), a Slack connector (against the local Slack stub) whose channel members change and whose
member list can fail to read, synced in full or permissions only, and a blue/green reindex to
another embedder and back (or to half-precision storage and back), and per-tenant HNSW graphs built
under writes. The machine keeps its own model
of what each document should be (content, source ACL, admin override, deletion and its origin), and of
the admin's decisions kept by source id, which outlive a prune or a delete and apply again when the
document comes back.

After every step, for every persona (each user, public only, bypass) and environment filter, each
search lane returns exactly the documents the model says the persona may see; the stored rows agree
with the model; every chunk is the chunker's output for its document's current text, and carries
its document's filters, as does every vector.

Steps: 10 examples x 30 steps in CI; WRITE_PATH_EXAMPLES / WRITE_PATH_STEPS raise them.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
from django.test import Client
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from rest_framework.test import APIClient

from knowledge.models import (
    ApiKey,
    Chunk,
    ChunkEmbedding,
    Connector,
    Document,
    DocumentPolicy,
    Environment,
    Principal,
    Tenant,
)
from knowledge.pipeline.active import active_embedder, active_spec
from knowledge.pipeline.chunkers.base import ChunkSource
from knowledge.pipeline.embedders.storage import split_spec, with_storage
from knowledge.pipeline.registry import configured_name, get_chunker
from knowledge.search import search_chunks
from knowledge.selectors.scopes import search_scope_for_key
from knowledge.services.connector_sync import connector_sync
from knowledge.services.jobs import job_run
from knowledge.services.permission_sync import connector_permissions_sync
from knowledge.services.reindex import reindex_backfill, reindex_job_for, reindex_switch
from knowledge.services.vector_indexes import vector_indexes_maintain
from knowledge.source_stubs.server import StubServer, serving
from knowledge.source_stubs.slack import TOKEN, Channel, SlackWorld
from retrieval_backends.postgres import PostgresRetrievalBackend
from retrieval_backends.types import SearchScope
from tests.api.conftest import bearer, issue_key
from tests.factories import UserFactory
from tests.knowledge.admin_forms import post_document_action, post_document_change, post_policy_action

EXAMPLES = int(os.environ.get("WRITE_PATH_EXAMPLES", "10"))
STEPS = int(os.environ.get("WRITE_PATH_STEPS", "30"))
QUERY = "harbour ferry timetable"
WORDS = ["north", "pier", "tides", "cargo", "night", "crew"]
USERS = [f"user{i}@example.com" for i in range(3)]
GROUPS = ["crew", "office"]
MEMBERS = {USERS[0]: {"crew"}, USERS[1]: {"crew", "office"}, USERS[2]: set()}
API_IDS = ["a0", "a1", "a2"]
FILES = ["f0.md", "sub/f1.md", "sub/f2.md"]
OTHER_EMBEDDER = "tests.knowledge.plugins.Hashing256Embedder"
SLACK_IDS = {user: f"U{i}" for i, user in enumerate(USERS)}
CHANNEL_GROUP = "slack:T0ACME/channel/C1"  # the source group Slack's channel members become
_tenants = itertools.count()


@dataclass(frozen=True)
class Acl:
    public: bool = False
    users: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()

    def allows(self, user: str | None, channel_members: frozenset[str]) -> bool:
        if self.public:
            return True
        if user is None:
            return False
        groups = MEMBERS[user] | ({CHANNEL_GROUP} if user in channel_members else set())
        return user in self.users or bool(groups & self.groups)


@dataclass
class Expected:
    """What one document should be, by the rules applied so far."""

    pulled: bool
    title: str
    content: str
    source_acl: Acl
    environment: str | None = None
    override: Acl | None = None
    deleted: str = ""  # "" or "admin"

    @property
    def acl(self) -> Acl:
        return self.override if self.override is not None else self.source_acl


acls = st.builds(
    Acl,
    public=st.booleans(),
    users=st.frozensets(st.sampled_from(USERS), max_size=2),
    groups=st.frozensets(st.sampled_from(GROUPS), max_size=2),
)
texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(lambda w: f"{QUERY} {' '.join(w)}")


@dataclass
class World:
    tenant: Tenant
    api: APIClient
    admin: Client
    connector: Connector
    folder: Path
    default_acl: Acl
    slack: SlackWorld
    slack_server: StubServer
    slack_connector: Connector
    services: ExitStack
    sidecar: Acl | None = None
    channel_members: frozenset[str] = frozenset()  # the channel's members as last synced
    expected: dict[tuple[str, str], Expected] = field(default_factory=dict)
    decisions: dict[tuple[str, str], tuple[Acl | None, str]] = field(default_factory=dict)


def _world() -> World:
    tenant = Tenant.objects.create(slug=f"paths-{next(_tenants)}", name="Write paths")
    principals = {u: Principal.objects.create(tenant=tenant, kind="user", external_id=u) for u in USERS}
    groups = {g: Principal.objects.create(tenant=tenant, kind="group", external_id=g) for g in GROUPS}
    for user, names in MEMBERS.items():
        principals[user].groups.set([groups[g] for g in names])
    Environment.objects.create(tenant=tenant, slug="prod", name="Prod")
    folder = Path(tempfile.mkdtemp(prefix="kb-paths-"))
    (folder / "sub").mkdir()
    connector = Connector.objects.create(
        tenant=tenant, name="folder", kind="filesystem", config={"path": str(folder)}, default_is_public=True
    )
    api = APIClient()
    api.credentials(**bearer(issue_key(tenant=tenant)))
    admin = Client()
    admin.force_login(UserFactory.create())
    slack, services = _slack_world(), ExitStack()
    server = services.enter_context(serving(slack.stub()))
    slack_connector = Connector.objects.create(
        tenant=tenant, name="slack", kind="slack", config={"api_url": server.url}, default_is_public=False
    )
    slack_connector.set_credential(TOKEN)
    slack_connector.save()
    return World(
        tenant,
        api,
        admin,
        connector,
        folder,
        default_acl=Acl(public=True),
        slack=slack,
        slack_server=server,
        slack_connector=slack_connector,
        services=services,
    )


def _slack_world() -> SlackWorld:
    """One private channel: a day of messages and a thread, each a document naming the channel group."""
    slack, now = SlackWorld(page_size=50), time.time()
    for user, slack_id in SLACK_IDS.items():
        slack.user(slack_id, user.split("@")[0], user)
    slack.channels = {"C1": Channel("harbour", [], is_private=True)}
    slack.post("C1", "U0", f"{QUERY} north", now - 300)
    thread = slack.post("C1", "U1", f"{QUERY} night crew", now - 200)
    slack.reply("C1", thread, "U2", f"{QUERY} cargo", now - 100)
    return slack


class WritePaths(RuleBasedStateMachine):
    steps = 0

    def __init__(self) -> None:
        super().__init__()
        self.world = _world()
        self.files: dict[str, str] = {}

    def teardown(self) -> None:
        shutil.rmtree(self.world.folder, ignore_errors=True)
        self.world.services.close()

    # --- helpers ------------------------------------------------------------------------------------
    def _api_connector(self) -> Connector:
        return Connector.objects.get(tenant=self.world.tenant, name="api")

    def _connector(self, source: str) -> Connector:
        if source == "slack":
            return self.world.slack_connector
        return self.world.connector if source == "fs" else self._api_connector()

    def _document(self, key: tuple[str, str]) -> Document:
        return Document.objects.get(connector=self._connector(key[0]), external_id=key[1])

    def _keys(self) -> list[tuple[str, str]]:
        return sorted(self.world.expected)

    def _remember(self, key: tuple[str, str]) -> None:
        """The admin's decisions about the document, kept by its source id (DocumentPolicy)."""
        expected = self.world.expected[key]
        if expected.override is not None or expected.deleted:
            self.world.decisions[key] = (expected.override, expected.deleted)
        else:
            self.world.decisions.pop(key, None)

    def _returning(self, key: tuple[str, str], new: Expected) -> Expected:
        """A document written anew gets the decisions kept for its source id."""
        override, deleted = self.world.decisions.get(key, (None, ""))
        return replace(new, override=override, deleted=deleted)

    def _file_acl(self, name: str) -> Acl:
        return (
            self.world.sidecar if name.startswith("sub/") and self.world.sidecar else self.world.default_acl
        )

    # --- API ----------------------------------------------------------------------------------------
    @rule(doc=st.sampled_from(API_IDS), text=texts, acl=acls, env=st.sampled_from([None, "prod"]))
    def api_upsert(self, doc: str, text: str, acl: Acl, env: str | None) -> None:
        body: dict[str, object] = {
            "id": doc,
            "title": f"Title {doc}",
            "content": text,
            "acl": {"public": acl.public, "users": sorted(acl.users), "groups": sorted(acl.groups)},
        }
        if env:
            body["environment"] = env
        response = self.world.api.post("/api/v1/index", body, format="json")
        assert response.status_code in (200, 201), response.content
        self._api_written(doc, text, acl, env)

    @rule(
        docs=st.lists(
            st.tuples(st.sampled_from(API_IDS), texts, acls, st.sampled_from([None, "prod"])),
            min_size=1,
            max_size=3,
            unique_by=lambda d: d[0],
        )
    )
    def api_batch_job(self, docs: list[tuple[str, str, Acl, str | None]]) -> None:
        """The batch endpoint: a job (202) that a worker writes slice by slice."""
        bodies = [
            {
                "id": doc,
                "title": f"Title {doc}",
                "content": text,
                "acl": {"public": acl.public, "users": sorted(acl.users), "groups": sorted(acl.groups)},
                **({"environment": env} if env else {}),
            }
            for doc, text, acl, env in docs
        ]
        response = self.world.api.post("/api/v1/index/batch", bodies, format="json")
        assert response.status_code == 202, response.content
        assert job_run(job_id=response.json()["id"]).state == "succeeded"
        for doc, text, acl, env in docs:
            self._api_written(doc, text, acl, env)

    def _api_written(self, doc: str, text: str, acl: Acl, env: str | None) -> None:
        old = self.world.expected.get(("api", doc))
        new = Expected(pulled=False, title=f"Title {doc}", content=text, source_acl=acl, environment=env)
        if old is not None:
            new = replace(new, override=old.override, deleted=old.deleted)
        else:
            new = self._returning(("api", doc), new)
        self.world.expected[("api", doc)] = new

    # --- the filesystem connector -------------------------------------------------------------------
    @rule(name=st.sampled_from(FILES), text=texts)
    def fs_write(self, name: str, text: str) -> None:
        (self.world.folder / name).write_text(text)
        self.files[name] = text

    @rule(name=st.sampled_from(FILES))
    def fs_remove(self, name: str) -> None:
        (self.world.folder / name).unlink(missing_ok=True)
        self.files.pop(name, None)

    @rule(acl=st.one_of(st.none(), acls))
    def fs_sidecar(self, acl: Acl | None) -> None:
        path = self.world.folder / "sub" / ".kbacl.json"
        if acl is None:
            path.unlink(missing_ok=True)
        else:
            body = {"public": acl.public, "users": sorted(acl.users), "groups": sorted(acl.groups)}
            path.write_text(json.dumps(body))
        self.world.sidecar = acl

    @rule()
    def fs_sync(self) -> None:
        outcome = connector_sync(connector=self.world.connector)
        assert outcome.claimed and not outcome.errors, outcome.errors
        for name, text in self.files.items():
            old = self.world.expected.get(("fs", name))
            title = name.rsplit("/", 1)[-1].removesuffix(".md")
            new = Expected(pulled=True, title=title, content=text, source_acl=self._file_acl(name))
            if old is not None:
                new = replace(new, override=old.override, deleted=old.deleted)
            else:
                new = self._returning(("fs", name), new)
            self.world.expected[("fs", name)] = new
        if self.files:  # a listing with nothing in it removes nothing
            for key in [k for k in self.world.expected if k[0] == "fs" and k[1] not in self.files]:
                del self.world.expected[key]

    # --- a Slack connector: channel members are a source group ---------------------------------------
    @rule(members=st.frozensets(st.sampled_from(USERS)))
    def slack_members_change(self, members: frozenset[str]) -> None:
        self.world.slack.channels["C1"].members = [SLACK_IDS[u] for u in sorted(members)]

    @rule(broken=st.booleans())
    def slack_members_unreadable(self, broken: bool) -> None:
        self.world.slack_server.faults.clear()
        if broken:
            error = {"ok": False, "error": "internal_error"}
            self.world.slack_server.fail("/conversations.members", 200, times=10**6, body=error)

    def _slack_acl(self) -> Acl:
        """The channel's ACL after a sync: its group, or nobody when its members could not be read
        (fail closed; the group keeps its last complete membership)."""
        if self.world.slack_server.faults:
            return Acl()
        members = self.world.slack.channels["C1"].members
        self.world.channel_members = frozenset(u for u, i in SLACK_IDS.items() if i in members)
        return Acl(groups=frozenset({CHANNEL_GROUP}))

    @rule()
    def slack_sync(self) -> None:
        outcome = connector_sync(connector=self.world.slack_connector)
        assert outcome.claimed and bool(outcome.errors) == bool(self.world.slack_server.faults)
        acl = self._slack_acl()
        for document in Document.objects.filter(connector=self.world.slack_connector):
            key = ("slack", document.external_id)
            old = self.world.expected.get(key)
            new = Expected(pulled=True, title=document.title, content=document.content, source_acl=acl)
            if old is not None:
                new = replace(new, title=old.title, content=old.content)
                new = replace(new, override=old.override, deleted=old.deleted)
            else:
                new = self._returning(key, new)
            self.world.expected[key] = new

    @precondition(lambda self: any(k[0] == "slack" for k in self.world.expected))
    @rule()
    def slack_permission_sync(self) -> None:
        outcome = connector_permissions_sync(connector=self.world.slack_connector)
        assert outcome.claimed and bool(outcome.errors) == bool(self.world.slack_server.faults)
        acl = self._slack_acl()
        for key in [k for k in self.world.expected if k[0] == "slack"]:
            self.world.expected[key].source_acl = acl

    # --- the admin ----------------------------------------------------------------------------------
    @precondition(lambda self: self.world.expected)
    @rule(data=st.data(), acl=acls)
    def admin_acl_edit(self, data: st.DataObject, acl: Acl) -> None:
        key = data.draw(st.sampled_from(self._keys()))
        names = sorted(acl.users | acl.groups)
        principals = Principal.objects.filter(tenant=self.world.tenant, external_id__in=names)
        post_document_change(
            self.world.admin,
            self._document(key),
            is_public=acl.public,
            allowed_principals=[p.pk for p in principals],
        )
        if acl != self.world.expected[key].acl:  # an unchanged field is no edit, so no override
            self.world.expected[key].override = acl
            self._remember(key)

    @precondition(lambda self: any(k[0] == "api" for k in self.world.expected))
    @rule(data=st.data(), text=texts)
    def admin_content_edit(self, data: st.DataObject, text: str) -> None:
        key = data.draw(st.sampled_from([k for k in self._keys() if k[0] == "api"]))
        post_document_change(self.world.admin, self._document(key), content=text)
        self.world.expected[key].content = text

    @precondition(lambda self: self.world.expected)
    @rule(data=st.data())
    def admin_clear_override(self, data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(self._keys()))
        post_document_action(self.world.admin, "clear_acl_override", self._document(key))
        self.world.expected[key].override = None
        self._remember(key)

    @precondition(lambda self: self.world.expected)
    @rule(data=st.data())
    def admin_soft_delete(self, data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(self._keys()))
        post_document_action(self.world.admin, "soft_delete", self._document(key))
        self.world.expected[key].deleted = "admin"
        self._remember(key)

    @precondition(lambda self: self.world.expected)
    @rule(data=st.data())
    def admin_restore(self, data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(self._keys()))
        post_document_action(self.world.admin, "restore", self._document(key))
        self.world.expected[key].deleted = ""
        self._remember(key)

    @precondition(lambda self: bool(set(self.world.decisions) - set(self.world.expected)))
    @rule(data=st.data(), acl=st.booleans())
    def admin_clear_a_gone_documents_policy(self, data: st.DataObject, acl: bool) -> None:
        key = data.draw(st.sampled_from(sorted(set(self.world.decisions) - set(self.world.expected))))
        policy = DocumentPolicy.objects.get(connector=self._connector(key[0]), external_id=key[1])
        post_policy_action(self.world.admin, "clear_acl_override" if acl else "clear_deletion", policy)
        override, deleted = self.world.decisions.pop(key)
        override, deleted = (None, deleted) if acl else (override, "")
        if override is not None or deleted:
            self.world.decisions[key] = (override, deleted)

    @precondition(lambda self: self.world.expected)
    @rule(data=st.data(), through_api=st.booleans())
    def delete_document(self, data: st.DataObject, through_api: bool) -> None:
        key = data.draw(st.sampled_from(self._keys()))
        if key[0] == "api" and through_api:
            assert self.world.api.delete(f"/api/v1/documents/{key[1]}").status_code == 204
        else:
            post_document_action(self.world.admin, "delete_selected", self._document(key))
        del self.world.expected[key]

    # --- reindex ------------------------------------------------------------------------------------
    @rule(half=st.booleans())
    def reindex_to_the_other_embedder(self, half: bool) -> None:
        """Another model, or the same one stored at the other precision (converted, not embedded)."""
        name, storage = split_spec(active_spec())
        if half:
            target = with_storage(name, "vector" if storage == "halfvec" else "halfvec")
        else:
            target = OTHER_EMBEDDER if name != OTHER_EMBEDDER else configured_name("embedder")
        job = reindex_job_for(spec=target)
        reindex_backfill(job=job)
        reindex_switch(job=job)

    @rule()
    def build_tenant_graphs(self) -> None:
        """Every tenant's vectors get a graph of their own (the threshold at 0), so the invariant's
        graph walk below searches through one."""
        vector_indexes_maintain(min_vectors=0)

    # --- invariants ---------------------------------------------------------------------------------
    def _visible(self, user: str | None, bypass: bool, environment: str | None) -> set[int]:
        ids = set()
        for key, expected in self.world.expected.items():
            if expected.deleted or (environment and expected.environment not in (None, environment)):
                continue
            if bypass or expected.acl.allows(user, self.world.channel_members):
                ids.add(self._document(key).pk)
        return ids

    @invariant()
    def search_returns_exactly_what_each_persona_may_see(self) -> None:
        WritePaths.steps += 1
        key = ApiKey(tenant=self.world.tenant, on_behalf_of=True, bypass_acl=True)
        personas = [(u, False) for u in USERS] + [("stranger@example.com", False), (None, True)]
        for user, bypass in personas:
            for environment in (None, "prod"):
                scope = search_scope_for_key(
                    key=key, on_behalf_of=user, bypass_acl=bypass, environment=environment
                )
                allowed = self._visible(user if user in MEMBERS else None, bypass, environment)
                for lane in ("keyword", "vector"):
                    hits = search_chunks(scope=scope, query_text=QUERY, lanes=(lane,), limit=100).hits
                    found = {h.document_id for h in hits}
                    assert found == allowed, f"{lane} lane as {user or 'bypass'} in {environment}"
                walked = self._graph_walk(scope)
                assert walked <= allowed, f"the graph walk as {user or 'bypass'} in {environment}"

    def _graph_walk(self, scope: SearchScope) -> set[int]:
        """The vector lane forced onto the tenant's HNSW graph (no exact scan), where one exists:
        it may find fewer rows than the exact scan, never one outside the scope."""
        embedder = active_embedder()
        vector = embedder.embed_queries([QUERY])[0]
        walker = PostgresRetrievalBackend(exact_scan_max_rows=0)
        hits = walker.vector_search(scope, vector, embedder.dimension, 3, model=embedder.name)
        return {h.document_id for h in hits}

    @invariant()
    def stored_rows_agree_with_the_model(self) -> None:
        stored = Document.objects.filter(tenant=self.world.tenant)
        assert stored.count() == len(self.world.expected)
        for key, expected in self.world.expected.items():
            document = self._document(key)
            grants = {p.external_id for p in document.allowed_principals.all()}
            acl = expected.acl
            assert (document.is_public, grants) == (acl.public, set(acl.users | acl.groups)), key
            assert document.content == expected.content and document.title == expected.title, key
            assert document.deletion_origin == expected.deleted, key
            assert (document.deleted_at is not None) == bool(expected.deleted), key
        policies = DocumentPolicy.objects.filter(connector__tenant=self.world.tenant).select_related(
            "connector"
        )
        sources = {"filesystem": "fs", "slack": "slack"}
        kept = {(sources.get(p.connector.kind, "api"), p.external_id): p for p in policies}
        assert set(kept) == set(self.world.decisions)
        for key, (override, deleted) in self.world.decisions.items():
            policy = kept[key]
            assert policy.deletes == bool(deleted) and policy.overrides_acl == (override is not None), key
            if override is not None:
                names = set(policy.principals.values_list("external_id", flat=True))
                assert (policy.is_public, names) == (override.public, set(override.users | override.groups))

    @invariant()
    def chunks_and_vectors_mirror_their_documents(self) -> None:
        chunker, model = get_chunker(), active_embedder().name
        for document in Document.objects.filter(tenant=self.world.tenant).prefetch_related(
            "allowed_principals"
        ):
            made = chunker.chunk(ChunkSource(document.title, document.content, document.metadata))
            chunks = list(Chunk.objects.filter(document=document).order_by("chunk_index"))
            assert [c.content for c in chunks] == [c.text for c in made], document.external_id
            tokens = sorted(
                {p.acl_token for p in document.allowed_principals.all()}
                | ({"public"} if document.is_public else set())
            )
            for chunk in chunks:
                assert sorted(chunk.acl_tokens) == tokens and chunk.is_deleted == document.is_deleted
                assert chunk.environment_id == document.environment_id
            vectors = ChunkEmbedding.objects.filter(chunk__document=document)
            assert {v.chunk_id for v in vectors.filter(model=model)} == {c.pk for c in chunks}
            for vector in vectors.select_related("chunk"):
                assert sorted(vector.acl_tokens) == tokens and vector.is_deleted == document.is_deleted


WritePaths.TestCase.settings = settings(
    max_examples=EXAMPLES,
    stateful_step_count=STEPS,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@pytest.mark.django_db
def test_write_paths_keep_search_exactly_permission_correct() -> None:
    WritePaths.steps = 0
    WritePaths.TestCase("runTest").runTest()
    # Invariants also run once before the first step of each example.
    assert WritePaths.steps >= EXAMPLES * STEPS, f"only {WritePaths.steps} steps ran"
