"""Eval reports pages: real `evals retrieval` reports from the configured folder, and nothing outside it."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from knowledge.errors import NotFound
from knowledge.selectors.eval_reports import eval_report_get, eval_run_get, eval_run_list

pytestmark = pytest.mark.django_db


@pytest.fixture
def folder(tmp_path: Path, settings: Any) -> Path:
    reports = tmp_path / "reports"
    reports.mkdir()
    settings.KNOWLEDGE_EVAL_REPORTS_DIR = reports
    return reports


@pytest.fixture
def saved_run(folder: Path) -> Path:
    """One real run of the fixture evals (two configurations, to be quick), as JSON and Markdown + chart."""
    args = ["--configs", "keyword", "hybrid", "--k", "5,10", "--json", str(folder / "run.json")]
    call_command("evals", "retrieval", *args, "--markdown", str(folder / "run.md"), stdout=io.StringIO())
    return folder


def test_staff_only(client: Client, folder: Path) -> None:
    for url in ("/evals/", "/evals/run/", "/evals/run/chart.png"):
        assert "/admin/login/" in client.get(url)["Location"]


def test_list_detail_and_chart_of_a_real_run(staff: Client, saved_run: Path) -> None:
    listing = staff.get("/evals/")
    assert listing.status_code == 200 and b'href="/evals/run/"' in listing.content
    [(run, problem)] = listing.context["runs"]
    assert set(run.files) == {".json", ".md", ".png"} and problem == ""
    detail = staff.get("/evals/run/")
    report = detail.context["report"]
    assert report.header == ["config", "recall@5", "recall@10", "mrr@10", "ndcg@5", "ndcg@10", "queries/s"]
    assert [row[0] for row in report.rows] == ["keyword", "hybrid"]
    assert report.summary["dataset"] == "fixture" and report.summary["embedder"] == "hashing-sha256-384"
    html = detail.content.decode()
    assert '<img src="/evals/run/chart.png"' in html and '<th scope="row">hybrid</th>' in html
    chart = staff.get("/evals/run/chart.png")
    assert chart.status_code == 200 and chart["Content-Type"] == "image/png"
    assert b"".join(chart.streaming_content)[:8] == b"\x89PNG\r\n\x1a\n"  # type: ignore[attr-defined]


def test_a_markdown_only_run_shows_its_table(staff: Client, saved_run: Path) -> None:
    (saved_run / "run.json").unlink()
    report = staff.get("/evals/run/").context["report"]
    assert report.header[:2] == ["config", "recall@5"] and [r[0] for r in report.rows] == [
        "keyword",
        "hybrid",
    ]
    assert report.title == "fixture (test)" and not report.problem


def test_an_unreadable_report_says_why(staff: Client, folder: Path) -> None:
    (folder / "broken.json").write_text("{not json")
    (folder / "odd.json").write_text("[1, 2]")
    assert "cannot read broken.json" in staff.get("/evals/broken/").context["report"].problem
    assert "configs" in staff.get("/evals/odd/").context["report"].problem
    (folder / "lonely.png").write_bytes(b"\x89PNG")
    assert {r.name for r in eval_run_list(folder=folder)} == {"odd", "broken"}
    assert staff.get("/evals/lonely/").status_code == 404


def test_nothing_outside_the_folder_is_served(staff: Client, saved_run: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text('{"configs": {"leaked": {"metrics": {"x": 1}}}}')
    (tmp_path / "secret.png").write_bytes(b"\x89PNG secret")
    sub = saved_run / "sub"
    sub.mkdir()
    (sub / "nested.json").write_text('{"configs": {}}')
    os.symlink(secret, saved_run / "link.json")
    os.symlink(tmp_path / "secret.png", saved_run / "run2.png")
    (saved_run / "run2.md").write_text("| config |\n|---|\n| x |\n")
    for url in (
        "/evals/../secret/",
        "/evals/..%2Fsecret/",
        "/evals/%2E%2E%2Fsecret/",
        "/evals/%2Fetc%2Fpasswd/",
        "/evals/sub%2Fnested/",
        "/evals/link/",
        "/evals/..%2Fsecret/chart.png",
        "/evals/run2/chart.png",
        "/evals/.hidden/",
    ):
        response = staff.get(url)
        assert response.status_code == 404, url
        assert b"leaked" not in response.content and b"PNG secret" not in response.content
    names = {r.name for r in eval_run_list(folder=saved_run)}
    assert names == {"run", "run2"} and eval_run_get(folder=saved_run, name="run2").chart is None
    for name in ("../secret", "/etc/passwd", "sub/nested", "link", "", "."):
        with pytest.raises(NotFound):
            eval_report_get(folder=saved_run, name=name)


def test_an_empty_or_missing_folder_lists_nothing(staff: Client, folder: Path, settings: Any) -> None:
    assert staff.get("/evals/").context["runs"] == []
    settings.KNOWLEDGE_EVAL_REPORTS_DIR = folder / "missing"
    response = staff.get("/evals/")
    assert response.status_code == 200 and b"No reports yet" in response.content


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ('{"configs": {"a": {"metrics": {"ndcg@10": "high"}}}}', 'a ndcg@10 is "high", not a number'),
        ('{"configs": {"a": {"metrics": {"ndcg@10": true}}}}', "a ndcg@10 is true, not a number"),
        ('{"configs": {"a": {"metrics": {"ndcg@10": [1]}}}}', "a ndcg@10 is [1], not a number"),
        ('{"configs": {"a": 3}}', "config 'a' has no metrics mapping"),
        ('{"configs": {"a": {"metrics": 7}}}', "config 'a' has no metrics mapping"),
        ("[" * 50_000 + "]" * 50_000, "nested more than 32 levels deep"),
    ],
    ids=["string", "bool", "list", "row", "metrics", "deep"],
)
def test_a_malformed_report_is_listed_as_unreadable_not_a_500(
    staff: Client, folder: Path, body: str, problem: str
) -> None:
    (folder / "bad.json").write_text(body)
    listing = staff.get("/evals/")
    assert listing.status_code == 200
    [(_, listed)] = listing.context["runs"]
    assert (
        listed == f"cannot read bad.json: {problem}" and "unreadable: cannot read" in listing.content.decode()
    )
    detail = staff.get("/evals/bad/")
    assert detail.status_code == 200 and detail.context["report"].problem == listed


def test_null_metrics_and_odd_warnings_still_show_the_table(staff: Client, folder: Path) -> None:
    report = {
        "configs": {
            "a": {"metrics": {"ndcg@10": None, "mrr@10": 0.5}, "queries_per_second": None, "warnings": "x"},
            "b": {"metrics": {"ndcg@10": 0.25}, "warnings": ["slow", 3]},
        }
    }
    (folder / "odd.json").write_text(json.dumps(report))
    detail = staff.get("/evals/odd/").context["report"]
    assert detail.problem == "" and detail.rows == [["a", "–", "0.5000", "–"], ["b", "0.2500", "–", "–"]]
    assert detail.warnings == ["b: slow"]
