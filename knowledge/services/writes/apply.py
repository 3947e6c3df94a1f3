"""The locked half of a write: lock the rows, decide what changed, write documents, ACLs and chunks.

Every decision (re-chunk or not, which ACL, restore or not) is made on rows read under
`SELECT ... FOR UPDATE`, in the transaction that writes, so concurrent writers serialise per
document. Rows that do not exist yet are inserted first as placeholders (all-zero content hash,
which no real content has), so they can be locked like the others; a placeholder means "never
written", which is also how `created` is decided.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from knowledge.access.grants import grants_of, grants_replace, principal_kinds
from knowledge.access.principals import acl_keys, principals_resolve, tokens_for
from knowledge.access.rules import effective_after_source_change, source_acl_applies
from knowledge.models import Connector, Document, DocumentPolicy
from knowledge.services.access import documents_access_sync
from knowledge.services.chunks import PreparedChunks, chunks_replace
from knowledge.services.policies import policies_for_write
from knowledge.services.writes.prepare import Prepared
from knowledge.services.writes.validate import Resolved

PLACEHOLDER_HASH = "0" * 64
SOURCE_FIELDS = (
    *("title", "source_url", "content", "content_hash", "metadata", "language", "environment_id"),
    *("source_updated_at", "source_is_public", "acl_origin"),
)


@dataclass
class Applied:
    """What one locked batch did, by external id."""

    created: set[str] = field(default_factory=set)
    updated: set[str] = field(default_factory=set)
    unchanged: set[str] = field(default_factory=set)
    rechunked: set[str] = field(default_factory=set)
    chunks: int = 0
    documents: dict[str, Document] = field(default_factory=dict)


@dataclass
class _Plan:
    row: Document
    item: Resolved
    values: dict[str, Any]
    source_grants: set[int]
    effective_grants: set[int]
    changed: list[str]
    source_changed: bool
    effective_changed: bool
    needs_chunks: bool
    filters_changed: bool


def _locked_rows(connector: Connector, items: Sequence[Resolved]) -> list[Document]:
    """Every item's row, locked, in one statement: an upsert that inserts a placeholder for a new
    document and, for an existing one, takes its row lock (`ON CONFLICT DO UPDATE` with a no-op
    update). No gap is left between "the row exists" and "the row is locked", so a concurrent delete
    either commits first (the row is then inserted afresh) or waits for this transaction: a write
    always lands at the first try, however many deletes run against it.
    """
    rows = [
        Document(
            tenant_id=connector.tenant_id,
            connector=connector,
            external_id=item.external_id,
            content="",
            content_hash=PLACEHOLDER_HASH,
            language=item.language,
        )
        for item in sorted(items, key=lambda i: i.external_id)  # one lock order: no deadlocks
    ]
    Document.objects.bulk_create(
        rows,
        update_conflicts=True,
        unique_fields=["connector", "external_id"],
        update_fields=["external_id"],  # a no-op: the row is locked, nothing else changes
    )
    wanted = {item.external_id for item in items}
    return list(
        Document.objects.select_for_update()
        .filter(connector=connector, external_id__in=wanted)
        .order_by("pk")
    )


def _plan(
    row: Document,
    item: Resolved,
    grants: dict[str, dict[int, set[int]]],
    ids: dict[Any, int],
    policy: DocumentPolicy | None,
) -> _Plan:
    source, acl = item.source, item.acl
    source_grants = {ids[key] for key in acl_keys(acl)}
    values: dict[str, Any] = {
        "title": source.title,
        "source_url": source.source_url,
        "content": source.content,
        "content_hash": item.content_hash,
        "metadata": source.metadata,
        "language": item.language,
        "environment_id": item.environment_id,
        "source_updated_at": source.source_updated_at,
        "source_is_public": acl.public,
        "acl_origin": item.acl_origin,
    }
    effective_now = grants["effective"][row.pk]
    returned = _admin_decisions(row, policy, values)
    if returned is not None:
        effective = returned
    else:
        effective = effective_after_source_change(row, source=source_grants, current=effective_now)
        values["is_public"] = effective_after_source_change(row, source=acl.public, current=row.is_public)
    changed = [name for name, value in values.items() if getattr(row, name) != value]
    effective_changed = effective != effective_now
    return _Plan(
        row=row,
        item=item,
        values=values,
        source_grants=source_grants,
        effective_grants=effective,
        changed=changed,
        source_changed=source_grants != grants["source"][row.pk],
        effective_changed=effective_changed,
        needs_chunks=bool({"content_hash", "title", "language"} & set(changed))
        or source.embedding is not None,
        filters_changed=effective_changed
        or bool({"is_public", "environment_id", "deleted_at"} & set(changed)),
    )


def _admin_decisions(row: Document, policy: DocumentPolicy | None, values: dict[str, Any]) -> set[int] | None:
    """An admin's decisions win over the source: a deletion stays, and an override's ACL is the
    effective one. A policy (kept by source id across prunes) brings them back to a row that lost
    them; returns the override's grants when it does so, else None (the row's own grants apply)."""
    if policy is not None and policy.deletes:
        if row.deletion_origin != Document.DeletionOrigin.ADMIN:
            values.update(deleted_at=policy.deleted_at, deletion_origin=Document.DeletionOrigin.ADMIN)
    elif row.deleted_at is not None and row.deletion_origin != Document.DeletionOrigin.ADMIN:
        values.update(deleted_at=None, deletion_origin=Document.DeletionOrigin.NONE)
    if policy is None or not policy.overrides_acl or not source_acl_applies(row):
        return None
    values.update(
        acl_override_at=policy.acl_override_at,
        acl_override_by=policy.acl_override_by,
        is_public=policy.is_public,
    )
    return set(policy.principal_ids)  # type: ignore[attr-defined]


def _write_rows(plans: list[_Plan]) -> None:
    changed = [p for p in plans if p.changed]
    now = timezone.now()
    for plan in changed:
        for name in plan.changed:
            setattr(plan.row, name, plan.values[name])
        plan.row.updated_at = now
    for plan in changed:  # plain UPDATEs of each row's own changes: a fraction of bulk_update's CASEs
        fields = {name: getattr(plan.row, name) for name in (*plan.changed, "updated_at")}
        Document.objects.filter(pk=plan.row.pk).update(**fields)
    grants_replace(
        Document.source_principals.through, {p.row.pk: p.source_grants for p in plans if p.source_changed}
    )
    grants_replace(
        Document.allowed_principals.through,
        {p.row.pk: p.effective_grants for p in plans if p.effective_changed},
    )


def _write_chunks(plans: list[_Plan], prepared: dict[str, Prepared], created: set[str]) -> int:
    kinds = principal_kinds(pk for p in plans for pk in p.effective_grants)
    by_model: dict[str, list[PreparedChunks]] = defaultdict(list)
    for plan in plans:
        ready = prepared[plan.item.external_id]
        tokens = tokens_for(is_public=plan.row.is_public, principal_ids=plan.effective_grants, kinds=kinds)
        is_new = plan.item.external_id in created
        by_model[ready.model].append(
            PreparedChunks(plan.row, tuple(tokens), ready.chunks, ready.vectors, is_new)
        )
    return sum(chunks_replace(prepared=items, model=model) for model, items in by_model.items())


def apply_batch(
    connector: Connector,
    items: Sequence[Resolved],
    prepared: dict[str, Prepared],
    prepare_now: Callable[[list[Resolved]], dict[str, Prepared]],
    model: str,
) -> Applied:
    """Write the batch under row locks; `prepare_now` makes chunks the unlocked guess missed."""
    applied = Applied()
    with transaction.atomic():
        keys = {key for item in items for key in acl_keys(item.acl)}
        ids = principals_resolve(tenant=connector.tenant_id, keys=keys)
        rows = _locked_rows(connector, items)
        pks = [r.pk for r in rows]
        grants = {
            "effective": grants_of(Document.allowed_principals.through, pks),
            "source": grants_of(Document.source_principals.through, pks),
        }
        by_id = {item.external_id: item for item in items}
        policies = policies_for_write(connector=connector, external_ids=list(by_id))
        plans = [_plan(r, by_id[r.external_id], grants, ids, policies.get(r.external_id)) for r in rows]
        applied.created = {p.row.external_id for p in plans if p.row.content_hash == PLACEHOLDER_HASH}
        _write_rows(plans)
        rechunk = [p for p in plans if p.needs_chunks]
        missing = [p.item for p in rechunk if not _fits(prepared.get(p.item.external_id), p.item, model)]
        ready = {**prepared, **(prepare_now(missing) if missing else {})}
        applied.chunks = _write_chunks(rechunk, ready, applied.created)
        documents_access_sync(
            document_ids=[p.row.pk for p in plans if p.filters_changed and not p.needs_chunks]
        )
        _tally(applied, plans)
    return applied


def _fits(prepared: Prepared | None, item: Resolved, model: str) -> bool:
    return prepared is not None and prepared.fits(item, model)


def _tally(applied: Applied, plans: list[_Plan]) -> None:
    for plan in plans:
        external_id = plan.row.external_id
        applied.documents[external_id] = plan.row
        if plan.needs_chunks:
            applied.rechunked.add(external_id)
        if external_id in applied.created:
            continue
        touched = plan.changed or plan.source_changed or plan.effective_changed or plan.needs_chunks
        (applied.updated if touched else applied.unchanged).add(external_id)
