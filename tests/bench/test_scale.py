"""bench/scale.py at smoke size: tenant sizes, and one real run on both backends with the alone baselines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from opensearchpy import OpenSearch

from bench.common import ROOT, bench_url
from bench.scale import size_class, tenant_sizes

DATABASE = "knowledge_scale_smoke"


def test_sizes_are_zipf_like_with_the_largest_share_and_a_floor() -> None:
    sizes = tenant_sizes(1_000_000, 200, 0.3, 500)
    assert len(sizes) == 200 and sizes == sorted(sizes, reverse=True)
    assert abs(sizes[0] / 1_000_000 - 0.3) < 0.01 and min(sizes) == 500
    assert 1_000_000 <= sum(sizes) < 1_050_000
    classes = {size_class(s) for s in sizes}
    assert classes == {"100k+", "10k-100k", "1k-10k", "<1k"}


@pytest.fixture
def databases() -> Iterator[None]:
    yield
    admin = bench_url("postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        for name in (DATABASE, f"{DATABASE}_alone"):
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    url = os.environ.get("OPENSEARCH_URL", "")
    if url:  # the run's indices (bench/scale.py names them after the database)
        OpenSearch(url).indices.delete(index=DATABASE.replace("_", "-") + "-*", ignore=404)


@pytest.mark.opensearch
def test_a_smoke_run_reports_every_class_backend_and_baseline(databases: None, tmp_path: Path) -> None:
    out = tmp_path / "scale.json"
    command = [sys.executable, str(ROOT / "bench" / "scale.py"), "--chunks", "1500", "--tenants", "3",
               "--largest", "0.7", "--smallest", "100", "--queries", "3", "--warmup", "1",
               "--alone-classes", "1", "--database", DATABASE, "--json", str(out)]  # fmt: skip
    small = {"KNOWLEDGE_TENANT_INDEX_MIN_VECTORS": "500", "KNOWLEDGE_EXACT_SCAN_MAX_ROWS": "200"}
    done = subprocess.run(
        command, cwd=ROOT, env=os.environ | small, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(out.read_text())
    assert figures["tenants"] == 3 and figures["chunks"] == sum(tenant_sizes(1500, 3, 0.7, 100))
    assert set(figures["sizes"]) == {"1k-10k", "<1k"}  # 1,050 chunks, then the rest below 1,000
    # The biggest tenant (1,050 chunks) is past the lowered threshold: it has a graph of its own.
    assert figures["bytes_per_chunk"]["index.chunk_embedding_hnsw_t* (per tenant)"] > 0
    for backend in ("postgres", "opensearch"):
        shared = figures["shared"][backend]["tenants"]
        assert set(shared) == set(figures["sizes"])
        assert set(figures["alone"]) == {"1k-10k"}  # --alone-classes 1: the biggest class only
        for label, levels in shared.items():
            alone = figures["alone"].get(label, {}).get(backend, {}).get("tenants", {}).get("alone", {})
            for level in ("100%", "10%", "1%"):
                for row in (levels[level], *([alone[level]] if alone else [])):
                    assert 0 < row["hybrid"]["p50_ms"] <= row["hybrid"]["p95_ms"]
                    assert row["recall_at_10"] is None or row["recall_at_10"] >= 0.9
            assert levels["100%"]["recall_at_10"] is not None
    assert "recall@10" in done.stdout and "opensearch" in done.stdout
