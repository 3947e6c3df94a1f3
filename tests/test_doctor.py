"""`manage.py doctor` on the real PostgreSQL and Redis: OK lines, FAILs with the fix, and exit status."""

from __future__ import annotations

from collections.abc import Iterator
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from knowledge.models import KeywordStatistics, Tenant
from knowledge.pipeline.registry import LAYERS
from knowledge.services.documents import CLIENT_MODEL
from knowledge.services.vector_indexes import vector_indexes_maintain
from retrieval_backends.registry import reset_backend
from tests.factories import ChunkEmbeddingFactory, ChunkFactory

pytestmark = pytest.mark.django_db
HERE = "tests.pipeline.test_registry"


@pytest.fixture(autouse=True)
def _no_plugins_file(settings, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    settings.KNOWLEDGE_PLUGINS_FILE = tmp_path / "plugins.json"
    for layer in LAYERS:
        setattr(settings, f"KNOWLEDGE_{layer.upper()}", None)
        monkeypatch.delenv(f"KNOWLEDGE_{layer.upper()}", raising=False)


def doctor() -> tuple[list[str], bool]:
    out = StringIO()
    try:
        call_command("doctor", stdout=out)
    except CommandError as exc:
        assert "check(s) failed" in str(exc)
        return out.getvalue().splitlines(), False
    return out.getvalue().splitlines(), True


def line(lines: list[str], subject: str) -> str:
    (found,) = [entry for entry in lines if entry[5:].startswith(f"{subject}:")]
    return found


def test_a_healthy_deployment_is_all_ok() -> None:
    lines, passed = doctor()
    assert passed
    for subject in ("database", "redis", "pgvector", "retrieval backend", *LAYERS, "keyword statistics"):
        assert line(lines, subject).startswith("OK   "), lines
    assert line(lines, "database").startswith("OK   database: reachable (PostgreSQL ")
    assert line(lines, "embedder") == (
        "OK   embedder: local (from default): model all-MiniLM-L6-v2-int8, 384 dimensions"
    )
    assert line(lines, "embeddings").startswith("OK   embeddings: indexed chunks match")


def test_the_local_embedders_query_model_is_reported(settings, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from knowledge.pipeline.embedders import local

    monkeypatch.setattr(local, "_runtimes", {})  # as in a new process: nothing loaded yet
    settings.KNOWLEDGE_MODEL_CACHE_DIR = tmp_path
    lines, passed = doctor()
    assert passed  # a warning: the first search would build it
    assert line(lines, "query model") == (
        "WARN query model: the quantized query model is not built yet: the first search builds it "
        "(about 4 s) → run `manage.py prepare_embedder`"
    )
    call_command("prepare_embedder", stdout=StringIO())
    (built,) = tmp_path.glob("query-*.onnx")
    reported = line(doctor()[0], "query model")
    assert reported == f"OK   query model: search queries use the quantized copy {built}"
    settings.KNOWLEDGE_LOCAL_EMBEDDER_QUERY_INT8 = False
    assert not [entry for entry in doctor()[0] if "query model" in entry]


def test_a_bad_plugin_fails_with_what_to_do(settings) -> None:  # type: ignore[no-untyped-def]
    settings.KNOWLEDGE_RERANKER = "knowledge.pipeline.fusers.rrf.RRFFuser"
    lines, passed = doctor()
    assert not passed
    failure = line(lines, "reranker")
    assert failure.startswith(
        "FAIL reranker: 'knowledge.pipeline.fusers.rrf.RRFFuser' "
        "(from environment variable KNOWLEDGE_RERANKER): "
    )
    assert "is not a knowledge.pipeline.rerankers.base.Reranker subclass" in failure
    assert "→ Set KNOWLEDGE_RERANKER or the 'reranker' entry of" in failure


def test_the_doctor_embeds_a_text_with_the_embedder(settings) -> None:  # type: ignore[no-untyped-def]
    settings.KNOWLEDGE_EMBEDDER = f"{HERE}.WrongLength"
    lines, passed = doctor()
    assert not passed
    assert "returned a vector of 3 values, but dimension is 4" in line(lines, "embedder")


def test_unreachable_redis_fails(settings) -> None:  # type: ignore[no-untyped-def]
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    lines, passed = doctor()
    assert not passed and line(lines, "redis").startswith("FAIL redis: unreachable")


def test_vectors_of_another_model_are_a_failure_with_the_reindex_command() -> None:
    stale = ChunkEmbeddingFactory.create(model="old-model", dimensions=3)
    ChunkEmbeddingFactory.create(chunk__document=stale.chunk.document, model=CLIENT_MODEL, dimensions=3)
    slug = stale.tenant.slug
    lines, passed = doctor()
    assert not passed
    assert line(lines, "embeddings") == (
        f"FAIL embeddings: tenant {slug}: the indexed chunks hold old-model (3 dimensions), but the active "
        "embedder is all-MiniLM-L6-v2-int8 (384 dimensions); text queries will find no vectors "
        "→ run `manage.py reindex --embedder local` to re-embed every chunk with it, or set "
        "KNOWLEDGE_EMBEDDER back to the embedder that wrote the stored vectors"
    )


def test_an_evaluation_corpus_of_another_model_is_only_a_warning() -> None:
    """`manage.py evals retrieval` (suggested by /evals/) keeps its corpus as a tenant; run with another
    embedder it must not fail the doctor of the deployment it ran in."""
    stale = ChunkEmbeddingFactory.create(model="hashing-sha256-384", dimensions=384, embedding=[0.1] * 384)
    Tenant.objects.filter(pk=stale.tenant_id).update(slug="evals-fixture")
    lines, passed = doctor()
    assert passed, [entry for entry in lines if entry.startswith("FAIL")]
    assert line(lines, "embeddings").startswith(
        "WARN embeddings: evaluation corpus evals-fixture: its chunks hold hashing-sha256-384"
    )


def test_partly_reindexed_tenant_is_a_warning() -> None:
    current = ChunkEmbeddingFactory.create(
        model="all-MiniLM-L6-v2-int8", dimensions=384, embedding=[0.1] * 384
    )
    ChunkEmbeddingFactory.create(chunk__document=current.chunk.document, model="old-model", dimensions=3)
    lines, passed = doctor()
    assert passed
    assert line(lines, "embeddings").startswith(
        f"WARN embeddings: tenant {current.tenant.slug}: 1 of 2 embedded chunks have no vector from the "
        "active embedder all-MiniLM-L6-v2-int8 (384 dimensions) (they hold old-model (3 dimensions)) "
        "→ run `manage.py reindex"
    )


def test_missing_keyword_statistics_are_a_warning_with_the_command() -> None:
    chunk = ChunkFactory.create()
    KeywordStatistics.objects.filter(tenant_id=chunk.tenant_id).delete()
    lines, passed = doctor()
    assert passed
    slug = chunk.tenant.slug
    assert line(lines, "keyword statistics") == (
        f"WARN keyword statistics: tenant {slug}: missing for english, so keyword search ranks "
        f"with ts_rank instead of BM25 → run `manage.py rebuild_keyword_statistics --tenant {slug}`"
    )


@pytest.fixture
def threshold_of_three(settings) -> Iterator[None]:  # type: ignore[no-untyped-def]
    postgres = settings.RETRIEVAL_BACKENDS["postgres"]
    options = {**postgres["OPTIONS"], "tenant_index_min_vectors": 3}
    settings.RETRIEVAL_BACKENDS = {
        **settings.RETRIEVAL_BACKENDS,
        "postgres": {**postgres, "OPTIONS": options},
    }
    reset_backend()
    yield
    reset_backend()


@pytest.mark.usefixtures("threshold_of_three")
def test_a_tenant_past_the_threshold_without_its_graph_is_a_warning_until_built() -> None:
    chunk = ChunkFactory.create()
    for index in range(4):
        other = ChunkFactory.create(document=chunk.document, chunk_index=index + 1)
        ChunkEmbeddingFactory.create(chunk=other, tenant=chunk.tenant, connector=chunk.connector)
    lines, _ = doctor()
    assert line(lines, "vector indexes").startswith("WARN vector indexes: 1 tenant graph(s) due: ")
    vector_indexes_maintain(min_vectors=3)
    lines, _ = doctor()
    assert line(lines, "vector indexes") == (
        "OK   vector indexes: 1 tenant graph(s) ready; smaller tenants are searched exactly"
    )
