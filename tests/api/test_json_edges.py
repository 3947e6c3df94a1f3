"""JSON values PostgreSQL's jsonb refuses, and nesting no parser should recurse into: clean 400s, never
a database error or a 500."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from knowledge.models import Document
from tests.api.conftest import assert_error, post, post_raw

LONE_SURROGATES = [{"k": "\udc00"}, {"\ud800": 1}, {"k": ["ok", "\udfff"]}]


@pytest.mark.parametrize("metadata", LONE_SURROGATES)
def test_lone_surrogates_in_metadata_are_a_400_on_metadata(api: APIClient, metadata: object) -> None:
    raw = json.dumps({"id": "s", "content": "x", "metadata": metadata})  # escaped, as a client sends it
    response = post_raw(api, "index", raw)
    body = assert_error(response, 400, field="metadata")
    assert body["fields"]["metadata"] == ["Surrogate characters are not allowed."]
    assert "LINE" not in body["message"] and not Document.objects.filter(external_id="s").exists()


@pytest.mark.parametrize("shape", ["dict", "list"])
def test_metadata_nested_too_deeply_is_a_400(api: APIClient, shape: str) -> None:
    deep: object = "leaf"
    for _ in range(900):
        deep = {"k": deep} if shape == "dict" else [deep]
    body = assert_error(
        post(api, "index", {"id": "d", "content": "x", "metadata": {"k": deep}}), 400, "metadata"
    )
    assert body["fields"]["metadata"] == ["Nested more than 32 levels deep."]


def test_metadata_32_levels_deep_is_stored(api: APIClient) -> None:
    deep: object = "leaf"
    for _ in range(31):
        deep = {"k": deep}
    assert post(api, "index", {"id": "ok", "content": "x", "metadata": deep}).status_code == 201


@pytest.mark.parametrize("path", ["search", "index"])
def test_a_body_nested_beyond_the_parser_is_a_400(api: APIClient, path: str) -> None:
    raw = '{"query": "x", "id": "a", "content": "b", "top_k": ' + "[" * 3000 + "]" * 3000 + "}"
    body = assert_error(post_raw(api, path, raw), 400)
    assert body["message"] == "The request body is nested too deeply."
