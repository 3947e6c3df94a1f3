"""Stateful property on the real OpenSearch node: whatever mix of writes, prunes, restores, default-ACL
changes and delayed, reordered pushes runs, once the reconciler has run the index's own lanes (no
verification against PostgreSQL) return exactly the chunks each persona may see.

A held push reads its snapshot and then waits at its bulk request (a gate on the client) while other
steps change documents and push them; released later, it lands out of order. Folder files, their ACL
file and the connector's default change between syncs, so prunes and source ACLs move too.

8 examples x 20 steps in CI; INDEX_SYNC_EXAMPLES / INDEX_SYNC_STEPS raise them.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from knowledge.models import Chunk, Connector, Document, Principal, Tenant
from knowledge.pipeline.active import active_embedder
from knowledge.services.connector_sync import connector_sync
from knowledge.services.connectors import connector_apply_default_acl
from knowledge.services.documents import document_restore, document_soft_delete, document_upsert
from knowledge.services.index_sync import index_reconcile
from knowledge.services.index_sync.push import documents_push
from retrieval_backends.opensearch import OpenSearchRetrievalBackend
from retrieval_backends.types import SearchScope
from tests.opensearch import opensearch_backend

__all__ = ["opensearch_backend"]  # the fixture
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.opensearch]
EXAMPLES = int(os.environ.get("INDEX_SYNC_EXAMPLES", "8"))
STEPS = int(os.environ.get("INDEX_SYNC_STEPS", "20"))
QUERY = "lighthouse keeper logbook"
USERS = ["ann@example.com", "bob@example.com"]
GROUPS = ["crew"]
MEMBERS = {"ann@example.com": {"crew"}, "bob@example.com": set()}
FILES = ["f0.md", "sub/f1.md"]
API_IDS = ["a0", "a1"]
_tenants = itertools.count()

acls = st.fixed_dictionaries(
    {
        "public": st.booleans(),
        "users": st.lists(st.sampled_from(USERS), unique=True),
        "groups": st.lists(st.sampled_from(GROUPS), unique=True),
    }
)
texts = st.sampled_from(["storm", "fog", "tide", "gull"]).map(lambda w: f"{QUERY} {w}")


class Gate:
    """Holds the bulk requests of one thread until released; every other thread's pass."""

    def __init__(self, backend: OpenSearchRetrievalBackend) -> None:
        self.original = backend.client.bulk
        self.thread: threading.Thread | None = None
        self.arrived, self.release = threading.Event(), threading.Event()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if threading.current_thread() is self.thread:
            self.arrived.set()
            self.release.wait(60)
        return self.original(*args, **kwargs)


class IndexSync(RuleBasedStateMachine):
    backend: OpenSearchRetrievalBackend
    checks = 0
    held_pushes = 0

    def __init__(self) -> None:
        super().__init__()
        self.tenant = Tenant.objects.create(slug=f"sync-{next(_tenants)}", name="Index sync")
        users = {u: Principal.objects.create(tenant=self.tenant, kind="user", external_id=u) for u in USERS}
        crew = Principal.objects.create(tenant=self.tenant, kind="group", external_id="crew")
        users["ann@example.com"].groups.set([crew])
        self.principals = {**users, "crew": crew}
        self.folder = Path(tempfile.mkdtemp(prefix="kb-sync-"))
        (self.folder / "sub").mkdir()
        self.connector = Connector.objects.create(
            tenant=self.tenant, name="folder", kind="filesystem", config={"path": str(self.folder)}
        )
        self.api = Connector.objects.create(tenant=self.tenant, name="api", kind="api")
        self.gate = Gate(self.backend)
        self.backend.client.bulk = self.gate  # type: ignore[method-assign]
        self.held: threading.Thread | None = None
        embedder = active_embedder()
        self.vector, self.model = list(embedder.embed_queries([QUERY])[0]), embedder.name

    def teardown(self) -> None:
        self.gate.release.set()
        if self.held is not None:
            self.held.join(60)
        self.backend.client.bulk = self.gate.original  # type: ignore[method-assign]
        shutil.rmtree(self.folder, ignore_errors=True)

    # --- writes -------------------------------------------------------------------------------------
    @rule(doc=st.sampled_from(API_IDS), text=texts, acl=acls)
    def api_upsert(self, doc: str, text: str, acl: dict[str, Any]) -> None:
        names = [*acl["users"], *acl["groups"]]
        document_upsert(
            connector=self.api, external_id=doc, content=text, is_public=acl["public"],
            principals=[self.principals[n] for n in names],
        )  # fmt: skip

    @rule(name=st.sampled_from(FILES), text=st.one_of(st.none(), texts))
    def fs_change(self, name: str, text: str | None) -> None:
        path = self.folder / name
        if text is None:
            path.unlink(missing_ok=True)
        else:
            path.write_text(text)

    @rule(acl=st.one_of(st.none(), acls))
    def fs_acl_file(self, acl: dict[str, Any] | None) -> None:
        path = self.folder / "sub" / ".kbacl.json"
        if acl is None:
            path.unlink(missing_ok=True)
        else:
            path.write_text(json.dumps(acl))

    @rule()
    def fs_sync(self) -> None:
        connector_sync(connector=Connector.objects.get(pk=self.connector.pk))  # prunes what is gone

    @rule(public=st.booleans(), crew=st.booleans())
    def default_acl(self, public: bool, crew: bool) -> None:
        connector = Connector.objects.get(pk=self.connector.pk)
        connector.default_is_public = public
        connector.save(update_fields=["default_is_public"])
        connector.default_principals.set([self.principals["crew"]] if crew else [])
        connector_apply_default_acl(connector=connector)

    @precondition(lambda self: Document.objects.filter(tenant=self.tenant).exists())
    @rule(data=st.data(), delete=st.booleans())
    def admin_soft_delete_or_restore(self, data: st.DataObject, delete: bool) -> None:
        ids = list(Document.objects.filter(tenant=self.tenant).order_by("pk").values_list("pk", flat=True))
        document = Document.objects.get(pk=data.draw(st.sampled_from(ids)))
        (document_soft_delete if delete else document_restore)(document=document)

    # --- pushes that finish out of order ------------------------------------------------------------
    @precondition(lambda self: self.held is None and Document.objects.filter(tenant=self.tenant).exists())
    @rule()
    def hold_a_push(self) -> None:
        """Read every document's state now; write it to the index only when released."""
        ids = list(Document.objects.filter(tenant=self.tenant).values_list("pk", flat=True))

        def push() -> None:
            try:
                documents_push(document_ids=ids, force=True)
            finally:
                connection.close()

        self.gate.arrived.clear()
        self.gate.release.clear()
        self.held = threading.Thread(target=push)
        self.gate.thread = self.held
        self.held.start()
        assert self.gate.arrived.wait(30), "the held push never reached its bulk request"
        IndexSync.held_pushes += 1

    @precondition(lambda self: self.held is not None)
    @rule()
    def release_the_held_push(self) -> None:
        assert self.held is not None
        self.gate.release.set()
        self.held.join(60)
        assert not self.held.is_alive()
        self.held = None

    @precondition(lambda self: self.held is None and Document.objects.filter(tenant=self.tenant).exists())
    @rule(data=st.data(), change=st.sampled_from(["api", "files", "default", "delete"]))
    def a_push_overtaken_by_a_newer_one(self, data: st.DataObject, change: str) -> None:
        """The bad order in one step: a push reads its snapshot, the document changes and the change
        is pushed, and only then does the first push land."""
        self.hold_a_push()
        if change == "api":
            self.api_upsert(data.draw(st.sampled_from(API_IDS)), data.draw(texts), data.draw(acls))
        elif change == "files":
            self.fs_change(data.draw(st.sampled_from(FILES)), data.draw(st.one_of(st.none(), texts)))
            self.fs_sync()
        elif change == "default":
            self.default_acl(data.draw(st.booleans()), data.draw(st.booleans()))
        else:
            self.admin_soft_delete_or_restore(data, data.draw(st.booleans()))
        index_reconcile(time_budget=None)  # the newer state reaches the index first
        self.release_the_held_push()

    # --- the invariant ------------------------------------------------------------------------------
    def _allowed_chunks(self, user: str | None, bypass: bool) -> set[int]:
        allowed = set()
        documents = Document.objects.filter(tenant=self.tenant, deleted_at__isnull=True)
        for document in documents.prefetch_related("allowed_principals"):
            names = {p.external_id for p in document.allowed_principals.all()}
            groups = MEMBERS.get(user or "", set())
            if bypass or document.is_public or (user in names) or bool(groups & names):
                allowed |= set(Chunk.objects.filter(document=document).values_list("pk", flat=True))
        return allowed

    def _tokens(self, user: str | None) -> frozenset[str]:
        tokens = {"public"}
        if user is not None:
            tokens.add(self.principals[user].acl_token)
            tokens |= {self.principals[g].acl_token for g in MEMBERS[user]}
        return frozenset(tokens)

    @invariant()
    def the_index_lanes_return_exactly_what_each_persona_may_see(self) -> None:
        IndexSync.checks += 1
        index_reconcile(time_budget=None)
        self.backend.refresh()
        for user, bypass in [(u, False) for u in USERS] + [(None, False), (None, True)]:
            tokens = self._tokens(user)
            scope = SearchScope(tenant_id=self.tenant.pk, principal_tokens=tokens, bypass_acl=bypass)
            allowed = self._allowed_chunks(user, bypass)
            who = user or ("bypass" if bypass else "public")
            keyword = {h.chunk_id for h in self.backend.keyword_search(scope, QUERY, ["english"], 100)}
            assert keyword == allowed, f"keyword lane as {who}"
            hits = self.backend.vector_search(scope, self.vector, len(self.vector), 100, model=self.model)
            assert {h.chunk_id for h in hits} == allowed, f"vector lane as {who}"


IndexSync.TestCase.settings = settings(
    max_examples=EXAMPLES,
    stateful_step_count=STEPS,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def test_the_index_converges_whatever_order_pushes_finish_in(
    opensearch_backend: OpenSearchRetrievalBackend,
) -> None:
    IndexSync.backend = opensearch_backend
    IndexSync.checks = IndexSync.held_pushes = 0
    IndexSync.TestCase("runTest").runTest()
    # The invariant also runs once before the first step of each example.
    assert IndexSync.checks >= EXAMPLES * STEPS and IndexSync.held_pushes, (
        IndexSync.checks,
        IndexSync.held_pushes,
    )
