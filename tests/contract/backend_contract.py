"""The contract every retrieval backend passes; each backend's test module subclasses it."""

from __future__ import annotations

import pytest

from retrieval_backends.base import KnowledgeRetrievalBackend
from retrieval_backends.types import EmbeddingUpdate, NeighborAnchor
from tests.contract.corpus import DIM, MODEL, Corpus, basis, build_corpus


def keys(corpus: Corpus, hits: list) -> list[str]:  # type: ignore[type-arg]
    by_id = {d.pk: k for k, d in corpus.docs.items()}
    return [by_id.get(h.document_id, f"?{h.document_id}") for h in hits]


class BackendContractTests:
    """Subclass and provide `backend` (a KnowledgeRetrievalBackend) and `timeout_error` fixtures.

    A backend with its own index overrides `settle` to make canonical writes searchable (push, refresh).
    """

    def settle(self, backend: KnowledgeRetrievalBackend) -> None:
        """Nothing to do where PostgreSQL is the index."""

    @pytest.fixture
    def corpus(self, backend: KnowledgeRetrievalBackend) -> Corpus:
        return build_corpus(backend, settle=lambda: self.settle(backend))

    def vector(self, corpus: Corpus, scope, vec, limit: int = 10, dims: int = DIM):  # type: ignore[no-untyped-def]
        return keys(corpus, corpus.backend.vector_search(scope, vec, dims, limit))

    def keyword(self, corpus: Corpus, scope, text: str, limit: int = 10):  # type: ignore[no-untyped-def]
        return keys(corpus, corpus.backend.keyword_search(scope, text, ["english"], limit))

    # --- writes -------------------------------------------------------------------------------------
    def test_insert_and_read_back_chunks(self, corpus: Corpus) -> None:
        doc = corpus.add("multi", ["zero", "one", "two"], None)
        chunks = corpus.backend.get_document_chunks(doc.pk)
        assert [c.chunk_index for c in chunks] == [0, 1, 2]
        assert [c.content for c in chunks] == ["zero", "one", "two"]
        assert corpus.backend.count_document_chunks(doc.pk) == 3

    def test_embedding_update_replaces_the_vector(self, corpus: Corpus) -> None:
        scope = corpus.alice_scope()
        assert corpus.backend.vector_search(scope, basis(7), DIM, 1)[0].score == pytest.approx(0.0, abs=1e-6)
        chunk = corpus.backend.get_document_chunks(corpus.docs["public"].pk)[0]
        corpus.backend.index_embeddings(
            [EmbeddingUpdate(chunk_id=chunk.id, vector=basis(7), model=MODEL)], DIM
        )
        corpus.settle()
        hits = corpus.backend.vector_search(scope, basis(7), DIM, 1)
        assert keys(corpus, hits) == ["public"] and hits[0].score == pytest.approx(1.0, abs=1e-6)

    def test_embedding_of_wrong_length_is_refused(self, corpus: Corpus) -> None:
        chunk = corpus.backend.get_document_chunks(corpus.docs["public"].pk)[0]
        with pytest.raises(ValueError, match="dimensions"):
            corpus.backend.index_embeddings(
                [EmbeddingUpdate(chunk_id=chunk.id, vector=(1.0, 0.0), model=MODEL)], DIM
            )

    def test_vectors_that_cannot_be_compared_are_refused(self, corpus: Corpus) -> None:
        chunk = corpus.backend.get_document_chunks(corpus.docs["public"].pk)[0]
        for bad in ((0.0,) * DIM, (float("nan"),) + (0.0,) * (DIM - 1), (1e39,) + (0.0,) * (DIM - 1)):
            with pytest.raises(ValueError, match="32-bit"):
                corpus.backend.index_embeddings(
                    [EmbeddingUpdate(chunk_id=chunk.id, vector=bad, model=MODEL)], DIM
                )

    def test_delete_is_idempotent(self, corpus: Corpus) -> None:
        doc = corpus.docs["public"]
        assert corpus.backend.delete_document_chunks(doc.pk) == 1
        assert corpus.backend.delete_document_chunks(doc.pk) == 0
        assert corpus.backend.delete_document_chunks(10**12) == 0
        assert corpus.backend.count_document_chunks(doc.pk) == 0
        corpus.settle()
        assert "public" not in self.vector(corpus, corpus.alice_scope(), basis(0))
        assert "public" not in self.keyword(corpus, corpus.alice_scope(), "quick brown fox")

    # --- ranking ------------------------------------------------------------------------------------
    def test_vector_ranking(self, corpus: Corpus) -> None:
        hits = corpus.backend.vector_search(corpus.alice_scope(), basis(2, noise=0.1), DIM, 3)
        assert keys(corpus, hits)[0] == "eng"
        assert hits[0].score == pytest.approx(1 / (1 + 0.01) ** 0.5, abs=1e-3)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)

    def test_keyword_ranking(self, corpus: Corpus) -> None:
        assert self.keyword(corpus, corpus.alice_scope(), "pager runbook")[0] == "eng"
        hits = corpus.backend.keyword_search(corpus.alice_scope(), "fox", ["english"], 10)
        assert set(keys(corpus, hits)) == {"public", "staging", "second"}
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)

    def test_keyword_lane_uses_or_semantics_and_stemming(self, corpus: Corpus) -> None:
        # No chunk has every word; "jumping" must still match "jumps" through the english stemmer.
        assert self.keyword(corpus, corpus.alice_scope(), "jumping zebras unicorns")[:1] == ["public"]

    # --- filters ------------------------------------------------------------------------------------
    def test_tenant_filter(self, corpus: Corpus) -> None:
        assert "foreign" not in self.vector(corpus, corpus.scope(bypass_acl=True), basis(0))
        assert "foreign" not in self.keyword(corpus, corpus.scope(bypass_acl=True), "tenant secret fox")
        other = corpus.scope("public")
        other = type(other)(tenant_id=corpus.other_tenant.pk, principal_tokens=frozenset({"public"}))
        assert self.vector(corpus, other, basis(0)) == ["foreign"]

    def test_connector_filter(self, corpus: Corpus) -> None:
        scope = corpus.alice_scope(connector_ids=(corpus.connector2.pk,))
        assert self.vector(corpus, scope, basis(0)) == ["second"]
        assert self.keyword(corpus, scope, "fox") == ["second"]
        assert self.vector(corpus, corpus.alice_scope(connector_ids=()), basis(0)) == []

    def test_user_acl(self, corpus: Corpus) -> None:
        assert "alice" in self.vector(corpus, corpus.alice_scope(), basis(1))
        assert "alice" not in self.vector(corpus, corpus.bob_scope(), basis(1))
        assert "alice" not in self.keyword(corpus, corpus.bob_scope(), "alice salary")

    def test_group_acl(self, corpus: Corpus) -> None:
        assert "eng" in self.keyword(corpus, corpus.alice_scope(), "runbook")
        assert "eng" not in self.keyword(corpus, corpus.bob_scope(), "runbook")
        assert "eng" not in self.vector(corpus, corpus.bob_scope(), basis(2))

    def test_public_only(self, corpus: Corpus) -> None:
        found = set(self.vector(corpus, corpus.scope("public"), basis(0)))
        assert found == {"public", "staging", "second"}

    def test_bypass_sees_all_live_chunks_of_the_tenant(self, corpus: Corpus) -> None:
        found = set(self.vector(corpus, corpus.scope(bypass_acl=True), basis(0)))
        assert found == {"public", "alice", "eng", "staging", "second"}

    def test_no_principals_sees_nothing(self, corpus: Corpus) -> None:
        assert self.vector(corpus, corpus.scope(), basis(0)) == []
        assert self.keyword(corpus, corpus.scope(), "fox") == []

    def test_environment_filter(self, corpus: Corpus) -> None:
        staging = set(self.vector(corpus, corpus.alice_scope(environment_id=corpus.staging.pk), basis(0)))
        assert staging == {"public", "alice", "staging", "second"}
        prod = set(self.keyword(corpus, corpus.alice_scope(environment_id=corpus.prod.pk), "runbook fox"))
        assert prod == {"eng", "public", "second"}

    def test_soft_deleted_never_returned(self, corpus: Corpus) -> None:
        assert "deleted" not in self.vector(corpus, corpus.scope(bypass_acl=True), basis(5))
        assert "deleted" not in self.keyword(corpus, corpus.scope(bypass_acl=True), "deleted memo")

    def test_filters_apply_before_the_top_k(self, corpus: Corpus) -> None:
        for i in range(30):
            corpus.add(
                f"hidden{i}", ["zebra zebra zebra stripes"], [basis(9)], tokens=(corpus.bob.acl_token,)
            )
        corpus.add("visible", ["a lone zebra"], [basis(9, noise=0.5)])
        assert self.vector(corpus, corpus.alice_scope(), basis(9), limit=1) == ["visible"]
        assert self.keyword(corpus, corpus.alice_scope(), "zebra", limit=1) == ["visible"]

    # --- neighbours ---------------------------------------------------------------------------------
    def test_neighbors_stop_at_gaps_and_inaccessible_chunks(self, corpus: Corpus) -> None:
        doc = corpus.add(
            "long",
            [f"paragraph {i}" for i in (0, 1, 2, 4, 5)],
            None,
            indexes=[0, 1, 2, 4, 5],
            chunk_tokens={1: (corpus.bob.acl_token,)},
        )
        corpus.add("next", ["paragraph next"], None)
        anchor = NeighborAnchor(document_id=doc.pk, chunk_index=2)
        found = corpus.backend.find_neighbors(corpus.alice_scope(), [anchor], radius=3)
        assert [(h.document_id, h.chunk_index) for h in found] == []
        bob = corpus.backend.find_neighbors(corpus.bob_scope(), [anchor], radius=3)
        assert [h.chunk_index for h in bob] == [0, 1]
        wide = corpus.backend.find_neighbors(
            corpus.bob_scope(), [NeighborAnchor(document_id=doc.pk, chunk_index=5)], radius=3
        )
        assert [h.chunk_index for h in wide] == [4]
        assert all(h.document_id == doc.pk for h in bob + wide)

    # --- dimensions ---------------------------------------------------------------------------------
    def test_mixed_dimensions_coexist(self, corpus: Corpus) -> None:
        corpus.add("wide", ["a 768 dimensional chunk"], [basis(0, dim=768)], model="wide-model")
        assert corpus.backend.get_populated_embedding_dimensions(corpus.tenant.pk, None) == [384, 768]
        assert self.vector(corpus, corpus.alice_scope(), basis(0, dim=768), dims=768) == ["wide"]
        assert corpus.backend.has_embedding_model(corpus.tenant.pk, "wide-model")
        assert not corpus.backend.has_embedding_model(corpus.other_tenant.pk, "wide-model")
        assert "wide" not in self.vector(corpus, corpus.alice_scope(), basis(0))

    # --- diagnostics --------------------------------------------------------------------------------
    def test_languages_and_statistics_report(self, corpus: Corpus) -> None:
        corpus.add("simple", ["plain words"], None, language="simple")
        assert corpus.backend.get_text_search_languages(corpus.tenant.pk, None) == ["english", "simple"]
        assert corpus.backend.get_text_search_languages(corpus.tenant.pk, [corpus.connector2.pk]) == [
            "english"
        ]
        assert isinstance(corpus.backend.has_keyword_statistics(corpus.tenant.pk, ["english"], None), bool)

    def test_timeout_classification(
        self, backend: KnowledgeRetrievalBackend, timeout_error: BaseException
    ) -> None:
        assert backend.is_search_timeout(timeout_error)
        assert not backend.is_search_timeout(ValueError("boom"))

    def test_health(self, backend: KnowledgeRetrievalBackend) -> None:
        backend.health()

    # --- sync hooks ---------------------------------------------------------------------------------
    def test_an_acl_change_reaches_both_lanes(self, corpus: Corpus) -> None:
        from knowledge.services.documents import document_set_acl

        document_set_acl(document=corpus.docs["alice"], is_public=False, principals=[corpus.bob])
        corpus.settle()
        assert "alice" not in self.vector(corpus, corpus.alice_scope(), basis(1))
        assert "alice" not in self.keyword(corpus, corpus.alice_scope(), "alice salary")
        assert self.vector(corpus, corpus.bob_scope(), basis(1))[:1] == ["alice"]
        assert self.keyword(corpus, corpus.bob_scope(), "alice salary")[:1] == ["alice"]

    def test_a_soft_delete_and_a_deletion_reach_both_lanes(self, corpus: Corpus) -> None:
        from knowledge.services.documents import document_hard_delete, document_soft_delete

        document_soft_delete(document=corpus.docs["staging"])
        document_hard_delete(document_id=corpus.docs["second"].pk)
        corpus.settle()
        found = set(self.vector(corpus, corpus.scope(bypass_acl=True), basis(3)))
        found |= set(self.keyword(corpus, corpus.scope(bypass_acl=True), "staging checklist second notes"))
        assert not found & {"staging", "second"}

    def test_pushing_the_same_state_twice_changes_nothing(self, corpus: Corpus) -> None:
        from knowledge.services.index_sync import documents_push

        ids = [d.pk for d in corpus.docs.values()]
        before = (
            self.vector(corpus, corpus.alice_scope(), basis(0)),
            self.keyword(corpus, corpus.alice_scope(), "fox"),
        )
        documents_push(document_ids=ids)
        documents_push(document_ids=ids)
        corpus.settle()
        after = (
            self.vector(corpus, corpus.alice_scope(), basis(0)),
            self.keyword(corpus, corpus.alice_scope(), "fox"),
        )
        assert after == before
