"""Schemathesis fuzzing of every operation in /api/schema/: no 5xx, responses conform to the schema."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.core.parameters import ParameterLocation
from schemathesis.specs.openapi.checks import positive_data_acceptance

from knowledge.models import Tenant
from knowledge.services.api_indexing import api_document_index
from tests.api.conftest import issue_key

MAX_EXAMPLES = int(os.environ.get("API_FUZZ_EXAMPLES", "25"))

# Fields whose validity depends on stored data (environments, connectors, indexed dimensions, text-search
# configurations) or on validators JSON Schema cannot express (URLs, e-mail addresses, query-or-embedding).
DATA_DEPENDENT_FIELDS = {
    *("environment", "connector_id", "connector_ids", "embedding", "language", "source_url", "query"),
    "acl.users",
    "stages",  # each stage's option bounds, and their order (query stages first)
    "batch.id",  # a batch's ids must differ from each other, which its schema cannot say
}


@schemathesis.serializer("application/x-ndjson")
def ndjson(ctx: Any, value: Any) -> bytes:
    """The batch endpoint's NDJSON: one document per line (the schema describes one line)."""
    values = value if isinstance(value, list) else [value]
    return b"\n".join(json.dumps(v).encode() for v in values)


schema = schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application())


NUL_REFUSED = "Null characters are not allowed."  # PostgreSQL text cannot hold them


def _blamed_fields(response: Any) -> set[str] | None:
    """Fields a 400 names (NUL refusals aside), or None when it names none."""
    try:
        fields: dict[str, list[str]] = response.json().get("fields") or {}
    except ValueError:
        return None
    blamed = {_field(name) for name, messages in fields.items() if set(messages) != {NUL_REFUSED}}
    return blamed if fields else None


def _field(name: str) -> str:
    """A blamed field's name, a batch document's index dropped ("3.acl.users.0" -> "acl.users")."""
    first, _, rest = name.partition(".")
    if first.isdigit() and rest:
        return "batch.id" if rest == "id" else _field(rest)
    return "acl.users" if name.startswith("acl.users.") else first


def valid_data_is_accepted(ctx: Any, response: Any, case: schemathesis.Case) -> None:
    """Like `positive_data_acceptance`, but a 400 may blame a data-dependent field."""
    if case.meta is None or not case.meta.generation.mode.is_positive or response.status_code != 400:
        return
    blamed = _blamed_fields(response)
    if blamed is None or not blamed <= DATA_DEPENDENT_FIELDS:
        sent = f"{case.media_type}, {case.body!r:.200}"
        raise AssertionError(f"schema-valid request rejected: {response.text} ({sent})")


@pytest.fixture
def _keep_test_connection() -> Iterator[None]:
    """Like Django's test client: the WSGI app must not close the connection holding the test transaction."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def auth_header(tenant: Tenant, _keep_test_connection: None) -> dict[str, str]:
    """A key allowed everything, and one indexed document so searches and reads have something to find."""
    guide = {"id": "guide", "content": "How to fuzz an API.", "acl": {"public": True}}
    api_document_index(tenant=tenant, data=guide)
    return {"Authorization": f"Bearer {issue_key(tenant=tenant, on_behalf_of=True, bypass_acl=True)}"}


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_conforms_to_its_schema(case: schemathesis.Case, auth_header: dict[str, str]) -> None:
    # A case whose headers are deliberately invalid must go out without the valid key.
    negative_headers = case.meta is not None and case.meta.is_negative_at(ParameterLocation.HEADER)
    case.call_and_validate(
        headers=None if negative_headers else auth_header,
        excluded_checks=[positive_data_acceptance],
        additional_checks=[valid_data_is_accepted],
    )
