"""The contract every retrieval backend passes, as capability mixins a backend's test class combines.

A test class provides a `backend` fixture (the backend under test, fresh per test, with the test
database available) and mixes in what the backend offers:

* `LaneContract`: ranking, OR semantics and stemming of both lanes, text of the first hits;
* `ScopeContract`: every scope filter applied inside the lanes, before the top k, and changes of ACL
  and deletion state reaching both lanes;
* `DimensionContract`: vectors of several dimensions and models side by side;
* `TimeoutContract`: a lane over its budget raises `LaneTimedOut` (needs a `slow_backend` fixture);
* `HealthContract`: `health` and `doctor_checks` (needs an `unreachable_backend` fixture);
* `ExternalIndexContract` (external indexes): pushes are absolute, idempotent and ordered by version;
  deletions win over older pushes; `indexed_chunks_per_tenant`;
* `GenerationContract` (external indexes): blue/green generations.

`BackendContract` is all but the last two; an external index uses `ExternalBackendContract`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace

import pytest

from retrieval_backends.base import BackendUnavailable, ExternalIndex, KnowledgeRetrievalBackend, LaneTimedOut
from retrieval_backends.testing.corpus import DIM, Corpus, basis, build_corpus
from retrieval_backends.types import HALFVEC_SUFFIX, LaneHit, SearchScope


class _Base:
    @pytest.fixture
    def corpus(self, backend: KnowledgeRetrievalBackend) -> Corpus:
        return build_corpus(backend)

    @staticmethod
    def keys(corpus: Corpus, hits: Sequence[LaneHit]) -> list[str]:
        return [corpus.key_of(h.document_id) for h in hits]

    def vector(
        self, corpus: Corpus, scope: SearchScope, vec: tuple[float, ...], limit: int = 10
    ) -> list[str]:
        return self.keys(corpus, corpus.backend.vector_search(scope, vec, len(vec), limit))

    def keyword(self, corpus: Corpus, scope: SearchScope, text: str, limit: int = 10) -> list[str]:
        return self.keys(corpus, corpus.backend.keyword_search(scope, text, ["english"], limit))


class LaneContract(_Base):
    def test_vector_ranking(self, corpus: Corpus) -> None:
        hits = corpus.backend.vector_search(corpus.alice_scope(), basis(2, noise=0.1), DIM, 3)
        assert self.keys(corpus, hits)[0] == "eng"
        assert hits[0].score == pytest.approx(1 / (1 + 0.01) ** 0.5, abs=1e-3)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)

    def test_keyword_ranking(self, corpus: Corpus) -> None:
        assert self.keyword(corpus, corpus.alice_scope(), "pager runbook")[0] == "eng"
        hits = corpus.backend.keyword_search(corpus.alice_scope(), "fox", ["english"], 10)
        assert set(self.keys(corpus, hits)) == {"public", "staging", "second"}
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)

    def test_keyword_lane_uses_or_semantics_and_stemming(self, corpus: Corpus) -> None:
        # No chunk has every word; "jumping" must still match "jumps" through the english stemmer.
        assert self.keyword(corpus, corpus.alice_scope(), "jumping zebras unicorns")[:1] == ["public"]

    def test_text_of_the_first_hits_is_the_chunks_own_when_given(self, corpus: Corpus) -> None:
        for hits in (
            corpus.backend.vector_search(corpus.alice_scope(), basis(0), DIM, 5, text_hits=5),
            corpus.backend.keyword_search(corpus.alice_scope(), "fox", ["english"], 5, text_hits=5),
        ):
            texts = {corpus.key_of(h.document_id): h.content for h in hits if h.content is not None}
            assert all(text == corpus.docs[key].content for key, text in texts.items())

    def test_a_query_vector_of_another_length_is_refused(self, corpus: Corpus) -> None:
        with pytest.raises(ValueError, match="dimensions"):
            corpus.backend.vector_search(corpus.alice_scope(), (1.0, 0.0), DIM, 5)

    def test_empty_asks_find_nothing(self, corpus: Corpus) -> None:
        assert corpus.backend.keyword_search(corpus.alice_scope(), "   ", ["english"], 5) == []
        assert corpus.backend.keyword_search(corpus.alice_scope(), "fox", [], 5) == []
        assert corpus.backend.vector_search(corpus.alice_scope(), basis(0), DIM, 0) == []
        assert isinstance(corpus.backend.keyword_warnings(corpus.tenant.pk, ["english"]), list)


class ScopeContract(_Base):
    def test_tenant_filter(self, corpus: Corpus) -> None:
        assert "foreign" not in self.vector(corpus, corpus.scope(bypass_acl=True), basis(0))
        assert "foreign" not in self.keyword(corpus, corpus.scope(bypass_acl=True), "tenant secret fox")
        other = SearchScope(tenant_id=corpus.other_tenant.pk, principal_tokens=frozenset({"public"}))
        assert self.vector(corpus, other, basis(0)) == ["foreign"]

    def test_connector_filter(self, corpus: Corpus) -> None:
        scope = corpus.alice_scope(connector_ids=(corpus.connector2.pk,))
        assert self.vector(corpus, scope, basis(0)) == ["second"]
        assert self.keyword(corpus, scope, "fox") == ["second"]
        assert self.vector(corpus, corpus.alice_scope(connector_ids=()), basis(0)) == []

    def test_user_and_group_acls(self, corpus: Corpus) -> None:
        assert "alice" in self.vector(corpus, corpus.alice_scope(), basis(1))
        assert "alice" not in self.vector(corpus, corpus.bob_scope(), basis(1))
        assert "alice" not in self.keyword(corpus, corpus.bob_scope(), "alice salary")
        assert "eng" in self.keyword(corpus, corpus.alice_scope(), "runbook")
        assert "eng" not in self.keyword(corpus, corpus.bob_scope(), "runbook")
        assert "eng" not in self.vector(corpus, corpus.bob_scope(), basis(2))

    def test_public_only_bypass_and_nobody(self, corpus: Corpus) -> None:
        assert set(self.vector(corpus, corpus.scope("public"), basis(0))) == {"public", "staging", "second"}
        assert set(self.vector(corpus, corpus.scope(bypass_acl=True), basis(0))) == {
            "public", "alice", "eng", "staging", "second",
        }  # fmt: skip
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

    def test_an_acl_change_reaches_both_lanes(self, corpus: Corpus) -> None:
        corpus.change("alice", tokens=(corpus.bob.acl_token,))
        assert "alice" not in self.vector(corpus, corpus.alice_scope(), basis(1))
        assert "alice" not in self.keyword(corpus, corpus.alice_scope(), "alice salary")
        assert self.vector(corpus, corpus.bob_scope(), basis(1))[:1] == ["alice"]
        assert self.keyword(corpus, corpus.bob_scope(), "alice salary")[:1] == ["alice"]

    def test_a_soft_delete_and_a_deletion_reach_both_lanes(self, corpus: Corpus) -> None:
        corpus.change("staging", deleted=True)
        corpus.delete("second")
        found = set(self.vector(corpus, corpus.scope(bypass_acl=True), basis(3)))
        found |= set(self.keyword(corpus, corpus.scope(bypass_acl=True), "staging checklist second notes"))
        assert not found & {"staging", "second"}


class DimensionContract(_Base):
    def test_mixed_dimensions_and_models_coexist(self, corpus: Corpus) -> None:
        corpus.add("wide", ["a 768 dimensional chunk"], [basis(0, dim=768)], model="wide-model")
        assert self.vector(corpus, corpus.alice_scope(), basis(0, dim=768)) == ["wide"]
        assert "wide" not in self.vector(corpus, corpus.alice_scope(), basis(0))
        hits = corpus.backend.vector_search(corpus.alice_scope(), basis(0, dim=768), 768, 5, model="other")
        assert hits == []

    def test_half_precision_vectors_rank_like_full_ones(self, corpus: Corpus) -> None:
        """A model key ending in `@halfvec` is stored compactly (PostgreSQL's halfvec, an external
        index's own encoding) and ranks as its full-precision copy does, filters included."""
        rng = random.Random(11)
        vectors = [tuple(rng.gauss(0, 1) for _ in range(DIM)) for _ in range(12)]
        for model in ("full-model", "full-model" + HALFVEC_SUFFIX):
            for i, vector in enumerate(vectors):
                tokens = ("public",) if i % 3 else ("u:nobody",)
                corpus.add(f"{model}-{i}", [f"chunk {i}"], [vector], model=model, tokens=tokens)
        query = tuple(rng.gauss(0, 1) for _ in range(DIM))
        ranked = {}
        for model in ("full-model", "full-model" + HALFVEC_SUFFIX):
            hits = corpus.backend.vector_search(corpus.alice_scope(), query, DIM, 5, model=model)
            ranked[model] = [corpus.key_of(h.document_id).rsplit("-", 1)[1] for h in hits]
            assert all(int(i) % 3 for i in ranked[model])  # the private ones never come back
        assert ranked["full-model"] == ranked["full-model" + HALFVEC_SUFFIX]


class TimeoutContract(_Base):
    """Needs a `slow_backend` fixture: the same backend whose lanes cannot finish in their budget (a
    real stall, e.g. a table lock held by another session: hence committed transactions here)."""

    pytestmark = pytest.mark.django_db(transaction=True)

    def test_a_lane_over_its_budget_raises_lane_timed_out(
        self, slow_backend: KnowledgeRetrievalBackend
    ) -> None:
        scope = SearchScope(tenant_id=1, principal_tokens=frozenset({"public"}))
        with pytest.raises(LaneTimedOut):
            slow_backend.keyword_search(scope, "fox", ["english"], 10)
        with pytest.raises(LaneTimedOut):
            slow_backend.vector_search(scope, basis(0), DIM, 10)


class HealthContract(_Base):
    """Needs an `unreachable_backend` fixture: the same backend pointed at nothing (for PostgreSQL's
    own index, the database down: hence committed transactions here)."""

    pytestmark = pytest.mark.django_db(transaction=True)

    def test_health_and_doctor(self, backend: KnowledgeRetrievalBackend) -> None:
        backend.health()
        for status, subject, message, _fix in backend.doctor_checks():
            assert status in {"OK", "WARN", "FAIL"} and subject and message

    def test_an_unreachable_index_is_unavailable(
        self, unreachable_backend: KnowledgeRetrievalBackend
    ) -> None:
        with pytest.raises(BackendUnavailable):
            unreachable_backend.health()


class ExternalIndexContract(_Base):
    def test_pushing_the_same_state_twice_changes_nothing(self, corpus: Corpus) -> None:
        before = (
            self.vector(corpus, corpus.alice_scope(), basis(0)),
            self.keyword(corpus, corpus.alice_scope(), "fox"),
        )
        state = corpus.state("public")
        corpus.push(state)
        corpus.push(state)
        after = (
            self.vector(corpus, corpus.alice_scope(), basis(0)),
            self.keyword(corpus, corpus.alice_scope(), "fox"),
        )
        assert after == before

    def test_an_older_state_never_overwrites_a_newer_one(self, corpus: Corpus) -> None:
        older = corpus.state("alice")
        newer = replace(corpus.state("alice"), acl_tokens=(corpus.bob.acl_token,))
        corpus.push(newer)
        corpus.push(older)  # lands last, as a slow push would
        assert "alice" not in self.keyword(corpus, corpus.alice_scope(), "alice salary")
        assert self.keyword(corpus, corpus.bob_scope(), "alice salary")[:1] == ["alice"]

    def test_a_deletion_wins_over_an_older_push_that_lands_after_it(self, corpus: Corpus) -> None:
        stale = corpus.state("public")
        corpus.delete("public")
        corpus.push(stale)
        assert "public" not in self.vector(corpus, corpus.scope(bypass_acl=True), basis(0))
        assert "public" not in self.keyword(corpus, corpus.scope(bypass_acl=True), "quick brown fox")

    def test_chunks_a_newer_state_no_longer_has_are_gone(self, corpus: Corpus) -> None:
        state = corpus.state("eng")
        assert state.chunks
        corpus.push(replace(state, chunks=state.chunks[:0], version=state.version + 1))
        assert "eng" not in self.keyword(corpus, corpus.alice_scope(), "runbook pager")

    def test_indexed_chunks_per_tenant(self, corpus: Corpus) -> None:
        external = corpus.external
        assert external is not None
        counts = external.indexed_chunks_per_tenant()
        assert counts[corpus.tenant.pk] == 6 and counts[corpus.other_tenant.pk] == 1


class GenerationContract(_Base):
    def test_a_new_generation_serves_only_once_activated(self, corpus: Corpus) -> None:
        external = corpus.external
        assert isinstance(external, ExternalIndex)
        generation = external.start_index_generation([DIM])
        state = replace(corpus.state("public"), acl_tokens=(corpus.bob.acl_token,))
        assert external.sync_document_access([state], generation=generation) == {}
        external.refresh()
        assert "public" in self.vector(corpus, corpus.alice_scope(), basis(0))  # the old one serves
        external.activate_index_generation(generation)
        external.refresh()
        assert self.vector(corpus, corpus.bob_scope(), basis(0)) == ["public"]  # only what was copied
        assert self.vector(corpus, corpus.alice_scope(), basis(0)) == []

    def test_an_abandoned_generation_never_serves(self, corpus: Corpus) -> None:
        external = corpus.external
        assert isinstance(external, ExternalIndex)
        generation = external.start_index_generation([DIM])
        external.abandon_index_generation(generation)
        assert "public" in self.vector(corpus, corpus.alice_scope(), basis(0))


class BackendContract(LaneContract, ScopeContract, DimensionContract, TimeoutContract, HealthContract):
    """The whole contract of a backend searching the canonical store itself."""


class ExternalBackendContract(BackendContract, ExternalIndexContract, GenerationContract):
    """The whole contract of an external index."""
