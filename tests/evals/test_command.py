"""`manage.py evals retrieval` on the committed fixture, in the test database."""

from __future__ import annotations

import importlib.util
import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from knowledge.evals.configs import CONFIGS
from knowledge.evals.datasets import (
    FIXTURE_DIR,
    FIXTURE_TENANT,
    corpus_ingest,
    load_dataset,
    model_tenant_slug,
)
from knowledge.models import Connector, EvalCorpus
from knowledge.pipeline.active import active_embedder, embedder_for, forget_active_embedder
from knowledge.pipeline.embedders.local import MODEL_PACKAGE, TOKENIZER_PACKAGE
from knowledge.pipeline.registry import configured_name

pytestmark = pytest.mark.django_db
BASELINE = FIXTURE_DIR / "baseline.json"
LOCAL_BASELINE = FIXTURE_DIR / "baseline-local.json"
EMBEDDER = embedder_for(configured_name("embedder")).name  # the configured one (no reindex switch in tests)
LOCAL_MODEL_MISSING = [
    package
    for package in (MODEL_PACKAGE, TOKENIZER_PACKAGE, "onnxruntime", "tokenizers")
    if importlib.util.find_spec(package) is None
]


def evals(*args: str) -> str:
    out = io.StringIO()
    call_command("evals", "retrieval", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.fixture(scope="module")
def report(django_db_setup: Any, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One full run (all configurations) shared by the shape tests; rolled back afterwards."""
    from django.db import transaction

    folder = tmp_path_factory.mktemp("evals")
    with django_db_blocker.unblock(), transaction.atomic():
        output = evals("--json", str(folder / "r.json"), "--markdown", str(folder / "r.md"))
        transaction.set_rollback(True)
    return output, json.loads((folder / "r.json").read_text()), folder


def test_fixture_is_big_enough_and_judged() -> None:
    dataset = load_dataset(FIXTURE_DIR, "test")
    assert len(dataset.qrels) >= 30
    assert sum(1 for _ in (FIXTURE_DIR / "corpus.jsonl").open()) >= 40
    assert {grade for judged in dataset.qrels.values() for grade in judged.values()} >= {1, 2}


def test_table_and_json_shape(report: Any) -> None:
    output, data, _ = report
    header = "config  recall@1  recall@5  recall@10  recall@100  mrr@10  ndcg@1  ndcg@5  ndcg@10  ndcg@100"
    assert " ".join(output.split()).find(" ".join(header.split())) >= 0
    assert list(data["configs"]) == [name for name, c in CONFIGS.items() if c.pipeline is None]
    assert data["ks"] == [1, 5, 10, 100] and data["queries"] >= 30 and data["dataset"] == "fixture"
    for row in data["configs"].values():
        assert (
            set(row) == {"metrics", "queries_per_second", "query_ms", "warnings", "stage_ms"}
            and row["warnings"] == []
        )
        assert all(0.0 <= value <= 1.0 for value in row["metrics"].values())
        assert len(row["metrics"]) == 9 and row["queries_per_second"] > 0
    assert set(data["per_query"]["hybrid"]) == set(load_dataset(FIXTURE_DIR, "test").qrels)


def test_hybrid_beats_a_single_lane(report: Any) -> None:
    metrics = {name: row["metrics"] for name, row in report[1]["configs"].items()}
    assert metrics["hybrid"]["ndcg@10"] > min(metrics["keyword"]["ndcg@10"], metrics["vector"]["ndcg@10"])


@pytest.mark.skipif(bool(LOCAL_MODEL_MISSING), reason="the local model is not installed")
def test_with_the_local_model_its_baseline_holds_and_hybrid_is_not_below_either_lane(
    settings: Any, tmp_path: Path
) -> None:
    settings.KNOWLEDGE_EMBEDDER = "local"  # the suite's settings choose hashing
    forget_active_embedder()
    output = evals("--baseline", str(LOCAL_BASELINE), "--json", str(tmp_path / "local.json"))
    assert "no metric dropped" in output  # the baseline also names the embedder, so MiniLM ran
    report = json.loads((tmp_path / "local.json").read_text())
    assert report["embedder"] == json.loads(LOCAL_BASELINE.read_text())["embedder"] != EMBEDDER
    metrics = {name: row["metrics"] for name, row in report["configs"].items()}
    best_lane = max(metrics["keyword"]["ndcg@10"], metrics["vector"]["ndcg@10"])
    assert metrics["hybrid"]["ndcg@10"] >= best_lane - 0.005  # within one rank swap of 42 queries
    assert metrics["hybrid"]["ndcg@10"] > metrics["hybrid-rrf"]["ndcg@10"]


def test_markdown_links_the_chart_relatively(report: Any) -> None:
    folder = report[2]
    markdown = (folder / "r.md").read_text()
    assert "](r.png)" in markdown and "| hybrid |" in markdown
    assert (folder / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.skipif(
    # Decided at collection, before any database exists: the configured embedder (no reindex switch in tests).
    EMBEDDER != "hashing-sha256-384",
    reason="the baseline is recorded with hashing",
)
def test_the_committed_baseline_holds_and_runs_are_deterministic(tmp_path: Path) -> None:
    first = evals("--baseline", str(BASELINE), "--json", str(tmp_path / "a.json"), "--compare", str(BASELINE))
    assert "no metric dropped" in first
    assert "hybrid: 0 improved, 0 worsened, 42 unchanged; mean delta +0.0000" in first
    second = evals("--json", str(tmp_path / "b.json"))
    assert "52 deleted" in second  # the fixture is re-ingested on every run

    def metrics(name: str) -> Any:
        return {c: r["metrics"] for c, r in json.loads((tmp_path / name).read_text())["configs"].items()}

    assert metrics("a.json") == metrics("b.json")


def test_a_drop_beyond_the_tolerance_fails_naming_the_metric(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    evals("--configs", "keyword", "--k", "10", "--baseline", str(path), "--update-baseline")
    recorded = json.loads(path.read_text())
    assert set(recorded["configs"]) == {"keyword"}
    recorded["configs"]["keyword"]["ndcg@10"] += 0.02
    recorded["configs"]["keyword"]["recall@10"] += 0.005  # within the tolerance
    path.write_text(json.dumps(recorded))
    with pytest.raises(CommandError) as failure:
        evals("--configs", "keyword", "--k", "10", "--baseline", str(path))
    assert "keyword ndcg@10" in str(failure.value) and "recall@10" not in str(failure.value)
    evals("--configs", "keyword", "--k", "10", "--baseline", str(path), "--tolerance", "0.05")


def test_a_new_embedder_or_chunker_reingests_and_an_unchanged_corpus_is_reused() -> None:
    first = corpus_ingest(root=FIXTURE_DIR, tenant_slug=FIXTURE_TENANT)
    assert not first.reused and first.stats is not None and first.stats.written >= 40
    assert corpus_ingest(root=FIXTURE_DIR, tenant_slug=FIXTURE_TENANT).reused
    for key in ("embedder", "chunker"):
        EvalCorpus.objects.filter(connector=first.connector).update(**{key: "old"})
        again = corpus_ingest(root=FIXTURE_DIR, tenant_slug=FIXTURE_TENANT)
        assert again.purged == first.stats.written and again.stats is not None
        assert again.stats.written == first.stats.written
    record = EvalCorpus.objects.get(connector=first.connector)
    assert record.embedder == active_embedder().name and record.chunker == configured_name("chunker")
    assert Connector.objects.get(pk=first.connector.pk).config == {}  # an api connector takes none
    forced = corpus_ingest(root=FIXTURE_DIR, tenant_slug=FIXTURE_TENANT, force=True)
    assert forced.purged == first.stats.written and not forced.reused


def test_compare_prints_each_changed_query_and_failures_lists_the_drops(tmp_path: Path) -> None:
    earlier = tmp_path / "earlier.json"
    evals("--configs", "keyword", "--json", str(earlier))
    data = json.loads(earlier.read_text())
    scores = data["per_query"]["keyword"]
    assert scores["q15"]["ndcg@10"] == 0.0 and scores["q01"]["ndcg@10"] == 1.0  # a paraphrase; an error code
    scores["q15"]["ndcg@10"], scores["q01"]["ndcg@10"] = 1.0, 0.25
    earlier.write_text(json.dumps(data))
    failures = tmp_path / "failures.jsonl"
    output = evals("--configs", "keyword", "--compare", str(earlier), "--failures", str(failures))
    assert "  -1.0000  1.0000 → 0.0000  q15  getting paid back for work purchases" in output
    assert "  +0.7500  0.2500 → 1.0000  q01  what does E4471 mean" in output
    assert "keyword: 1 improved, 1 worsened, 40 unchanged; mean delta -0.0060" in output
    (row,) = [json.loads(line) for line in failures.read_text().splitlines()]
    dataset = load_dataset(FIXTURE_DIR, "test")
    assert (row["config"], row["query_id"], row["query"]) == ("keyword", "q15", dataset.queries["q15"])
    assert (row["before"], row["after"], row["delta"]) == (1.0, 0.0, -1.0)
    relevant = {doc: grade for doc, grade in dataset.qrels["q15"].items() if grade > 0}
    assert {d["id"]: d["grade"] for d in row["expected"]} == relevant
    assert all(d["title"] for d in row["expected"])  # titles come from the ingested documents
    assert 0 < len(row["got"]) <= 10 and not any(d["id"] in relevant for d in row["got"])


def test_compare_refuses_another_dataset(tmp_path: Path) -> None:
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"dataset": "scifact", "split": "train", "per_query": {"keyword": {}}}))
    with pytest.raises(CommandError, match="scores 'scifact' \\(train\\); this run is 'fixture' \\(test\\)"):
        evals("--configs", "keyword", "--compare", str(other))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--failures", "drops.jsonl"), "--failures needs --compare"),
        (("--configs", "keyword", "--compare", "/nonexistent.json"), "cannot read"),
        (("--configs", "nope"), "unknown configuration"),
        (("--k", "0,5"), "positive"),
        (("--update-baseline",), "needs --baseline"),
        (("--beir", "/nonexistent"), "not a BEIR dataset"),
    ],
)
def test_bad_arguments(args: tuple[str, ...], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        evals(*args)


def test_stage_pipelines_are_configurations_with_their_overhead(tmp_path: Path) -> None:
    custom = '{"name": "penalised", "stages": [{"name": "diversify", "options": {"source_penalty": 1.0}}]}'
    out = evals("--configs", "hybrid", "hybrid+diversify", custom, "--json", str(tmp_path / "r.json"))
    report = json.loads((tmp_path / "r.json").read_text())
    assert set(report["configs"]) == {"hybrid", "hybrid+diversify", "penalised"}
    assert report["configs"]["hybrid"]["stage_ms"] == {}
    assert set(report["configs"]["penalised"]["stage_ms"]) == {"diversify"}
    assert "stage overhead (ms per query)" in out and "penalised: diversify" in out
    with pytest.raises(CommandError, match="comes after"):
        evals("--configs", '{"name": "bad", "stages": ["compress", "multi_query"]}')


def test_embedders_compares_models_each_on_its_own_copy_with_ingest_rate_and_query_ms(
    tmp_path: Path,
) -> None:
    other = "tests.knowledge.plugins.Hashing256Embedder"
    serving = active_embedder().name
    out = evals(
        "--embedders", "hashing", other, "--configs", "keyword", "vector", "--json", str(tmp_path / "m.json")
    )
    data = json.loads((tmp_path / "m.json").read_text())
    models = {m["model"]: m for m in data["models"]}
    assert set(models) == {"hashing-sha256-384", "hashing-sha256-256"}
    assert [models[m]["dimension"] for m in sorted(models)] == [256, 384]
    for model in models.values():
        assert (
            model["documents_per_second"] > 0 and model["chunks_per_second"] >= model["documents_per_second"]
        )
        assert set(model["configs"]) == {"keyword", "vector"}
        assert (
            0 < model["configs"]["vector"]["query_ms"]["p50"] <= model["configs"]["vector"]["query_ms"]["p95"]
        )
    # The same keyword lane on both copies; the vector lanes differ because the models do.
    keyword = {m["configs"]["keyword"]["metrics"]["ndcg@10"] for m in models.values()}
    vector = {m["configs"]["vector"]["metrics"]["ndcg@10"] for m in models.values()}
    assert len(keyword) == 1 and len(vector) == 2
    assert "models on fixture (test, 42 queries):" in out and "docs/s" in out
    # Each model has its own corpus copy holding only its vectors, and serving is untouched.
    for spec, model in (("hashing", "hashing-sha256-384"), (other, "hashing-sha256-256")):
        corpus = EvalCorpus.objects.get(connector__tenant__slug=model_tenant_slug(FIXTURE_TENANT, spec))
        assert corpus.embedder == model and corpus.chunks > 0 and corpus.ingest_seconds > 0
    assert active_embedder().name == serving
    # A second run reuses both copies and reports the recorded ingest rate.
    second = evals("--embedders", "hashing", "--configs", "keyword", "--json", str(tmp_path / "n.json"))
    assert "corpus already ingested" in second
    again = json.loads((tmp_path / "n.json").read_text())
    assert again["models"][0]["documents_per_second"] == models["hashing-sha256-384"]["documents_per_second"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--embedders", "no.such.Embedder"), "--embedders no.such.Embedder"),
        (("--embedders", "hashing", "--baseline", str(BASELINE)), "--embedders compares models"),
    ],
)
def test_embedders_refuses_an_unknown_spec_or_a_baseline(args: tuple[str, ...], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        evals(*args)
