"""Grant rows: each document's principals in its effective (`allowed_principals`) and source
(`source_principals`) grant tables, read and written here only."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from knowledge.models import Document, Principal


def grants_of(through: Any, document_ids: Iterable[int]) -> dict[int, set[int]]:
    """Each document's principal ids in a grants table (`allowed_principals` or `source_principals`)."""
    found: dict[int, set[int]] = defaultdict(set)
    for document_id, principal_id in through.objects.filter(document_id__in=list(document_ids)).values_list(
        "document_id", "principal_id"
    ):
        found[document_id].add(principal_id)
    return found


def grants_replace(through: Any, grants: Mapping[int, Iterable[int]]) -> None:
    """Each document's rows in a grants table (`allowed_principals` or `source_principals`) become
    exactly the given principal ids; documents not named are untouched."""
    if not grants:
        return
    through.objects.filter(document_id__in=list(grants)).delete()
    through.objects.bulk_create(
        [through(document_id=d, principal_id=p) for d, ids in grants.items() for p in sorted(ids)]
    )


def principal_kinds(principal_ids: Iterable[int]) -> dict[int, str]:
    """The kind of each principal (what `tokens_for` needs)."""
    return dict(Principal.objects.filter(pk__in=set(principal_ids)).values_list("pk", "kind"))


def document_grants(document_ids: Iterable[int]) -> tuple[dict[int, set[int]], dict[int, str]]:
    """Each document's granted principal ids, and the kind of every such principal (for `tokens_for`)."""
    grants = grants_of(Document.allowed_principals.through, document_ids)
    return grants, principal_kinds(p for found in grants.values() for p in found)


def effective_grants_set(document: Document, principals: Iterable[Principal]) -> None:
    """The document's effective grants become exactly these principals."""
    grants_replace(Document.allowed_principals.through, {document.pk: {p.pk for p in principals}})
