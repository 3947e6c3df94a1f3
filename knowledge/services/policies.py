"""Admin decisions kept by source identity (DocumentPolicy): recorded with the document's own change, in
its transaction, and applied again when a source writes the document anew after a prune.

Lock order is always the document row, then its policy row: the document services lock the row and
call these; a sync's write locks its rows and then reads their policies for update.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.utils import timezone

from knowledge.models import Connector, Document, DocumentPolicy, Principal


def _existing(connector_id: int, external_id: str) -> DocumentPolicy | None:
    found = DocumentPolicy.objects.select_for_update()
    return found.filter(connector_id=connector_id, external_id=external_id).first()


def _policy(document: Document) -> DocumentPolicy:
    policy, _ = DocumentPolicy.objects.select_for_update().get_or_create(
        connector_id=document.connector_id, external_id=document.external_id
    )
    return policy


def _save_or_drop(policy: DocumentPolicy) -> None:
    if policy.empty:
        policy.delete()
    else:
        policy.save()


def policy_record_acl(
    *, document: Document, is_public: bool, principals: Iterable[Principal], actor: str
) -> None:
    """The admin's ACL for the document, kept by its source id (the caller holds the row lock)."""
    policy = _policy(document)
    policy.acl_override_at = document.acl_override_at or timezone.now()
    policy.acl_override_by = actor[:150]
    policy.is_public = is_public
    policy.save()
    policy.principals.set(list(principals))


def policy_clear_acl(*, connector_id: int, external_id: str) -> None:
    policy = _existing(connector_id, external_id)
    if policy is not None:
        policy.acl_override_at, policy.acl_override_by, policy.is_public = None, "", False
        policy.principals.clear()
        _save_or_drop(policy)


def policy_record_deletion(*, document: Document, actor: str) -> None:
    policy = _policy(document)
    policy.deleted_at = document.deleted_at or timezone.now()
    policy.deleted_by = actor[:150]
    policy.save()


def policy_clear_deletion(*, connector_id: int, external_id: str) -> None:
    policy = _existing(connector_id, external_id)
    if policy is not None:
        policy.deleted_at, policy.deleted_by = None, ""
        _save_or_drop(policy)


def policies_for_write(*, connector: Connector, external_ids: Sequence[str]) -> dict[str, DocumentPolicy]:
    """The policies of these source ids, locked, each with `principal_ids` (a write's locked step)."""
    found = (
        DocumentPolicy.objects.select_for_update()
        .filter(connector=connector, external_id__in=list(external_ids))
        .order_by("pk")
    )
    policies = {p.external_id: p for p in found}
    grants: dict[int, set[int]] = {p.pk: set() for p in policies.values()}
    if grants:
        through = DocumentPolicy.principals.through
        rows = through.objects.filter(documentpolicy_id__in=list(grants))
        for policy_id, principal_id in rows.values_list("documentpolicy_id", "principal_id"):
            grants[policy_id].add(principal_id)
    for policy in policies.values():
        policy.principal_ids = grants[policy.pk]  # type: ignore[attr-defined]
    return policies


def policy_exists(policy: DocumentPolicy) -> bool:
    """Whether the policy is still there, locking it."""
    return _existing(policy.connector_id, policy.external_id) is not None


def policy_document_locked(policy: DocumentPolicy) -> Document | None:
    """The policy's document, locked; None while the source does not have it."""
    found = Document.objects.select_for_update()
    return found.filter(connector_id=policy.connector_id, external_id=policy.external_id).first()
