"""End to end over real HTTP (live server): index text only, then find it by meaning, not exact wording."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.api.conftest import issue_key
from tests.factories import TenantFactory


def call(url: str, key: str, body: dict[str, Any] | None = None, method: str = "POST") -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Authorization", f"Bearer {key}")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            raw = response.read()
            return response.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.mark.django_db(transaction=True)
def test_index_text_then_find_it_by_meaning(live_server: Any) -> None:
    key = issue_key(tenant=TenantFactory.create(slug="acme"))
    api = f"{live_server.url}/api/v1"
    documents = {
        "handbook/vacation": "Employees receive twenty-five days of paid vacation every year.",
        "handbook/expenses": "Submit travel expense receipts within thirty days of the trip.",
        "eng/oncall": "The on-call engineer acknowledges production pages within fifteen minutes.",
    }
    for doc_id, content in documents.items():
        status, body = call(f"{api}/index", key, {"id": doc_id, "content": content, "acl": {"public": True}})
        assert (status, body) == (201, {"status": "indexed"})

    status, body = call(f"{api}/search", key, {"query": "how many paid vacation days do employees get?"})
    assert status == 200, body
    top = body["results"][0]
    assert top["document_id"] == "handbook/vacation" and top["source_account_id"] == "acme"
    assert top["similarity"] > 0 and body["warnings"] == []

    assert call(f"{api}/documents/handbook/vacation", key, method="DELETE")[0] == 204
    status, body = call(f"{api}/search", key, {"query": "how many paid vacation days do employees get?"})
    assert "handbook/vacation" not in {r["document_id"] for r in body["results"]}
    status, body = call(f"{api}/search", key, {"query": "vacation", "top_k": 0})
    assert status == 400 and body["fields"]["top_k"]
