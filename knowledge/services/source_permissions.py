"""What a listing says about permissions, applied: documents naming a group whose members could not
be read in full become private (fail closed), and documents kept unchanged take their current source
ACL (only those whose stored source ACL differs are written)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import replace

from knowledge import names
from knowledge.connectors.types import Listing, SourceAcl
from knowledge.models import Connector, Document, Principal
from knowledge.selectors.connector_state import tracked
from knowledge.services.source_acls import documents_source_acl_set

PRIVATE = SourceAcl()


def listing_fail_closed(*, connector: Connector, listing: Listing) -> None:
    """Everything that names an incomplete group becomes private: the listing's documents and kept
    ACLs, and every stored document of the connector whose source ACL names it."""
    partial = {names.group_name(g) for g in listing.partial_groups}
    if not partial:
        return
    for index, document in enumerate(listing.documents):
        if document.acl is not None and partial & set(document.acl.groups):
            listing.documents[index] = replace(document, acl=PRIVATE)
            listing.private.add(document.external_id)
    for external_id, acl in list(listing.acls.items()):
        if partial & set(acl.groups):
            listing.acls[external_id] = PRIVATE
            listing.private.add(external_id)
    stored = connector.documents.filter(
        source_principals__kind=Principal.Kind.GROUP, source_principals__external_id__in=partial
    ).values_list("external_id", flat=True)
    listing.private.update(stored)


def kept_acls_apply(*, connector: Connector, acls: Mapping[str, SourceAcl]) -> int:
    """Give kept documents their source's current ACL (an admin-deleted one too, so a restore
    brings back the source's ACL of now); returns how many documents changed."""
    if not acls:
        return 0
    rows = list(
        connector.documents.filter(tracked(), external_id__in=list(acls)).values_list(
            "pk", "external_id", "source_is_public", "acl_origin"
        )
    )
    current = _source_acls([(pk, public) for pk, _, public, _ in rows])
    changed: dict[SourceAcl, list[int]] = defaultdict(list)
    for pk, external_id, _, origin in rows:
        wanted = SourceAcl.of(
            public=acls[external_id].public, users=acls[external_id].users, groups=acls[external_id].groups
        )
        if current[pk] != wanted or origin != Document.AclOrigin.SOURCE:
            changed[wanted].append(pk)
    for acl, ids in changed.items():
        documents_source_acl_set(
            tenant_id=connector.tenant_id, document_ids=ids, acl=acl, origin=Document.AclOrigin.SOURCE
        )
    return sum(len(ids) for ids in changed.values())


def _source_acls(documents: list[tuple[int, bool]]) -> dict[int, SourceAcl]:
    users: dict[int, list[str]] = defaultdict(list)
    groups: dict[int, list[str]] = defaultdict(list)
    through = Document.source_principals.through
    for document_id, kind, name in through.objects.filter(
        document_id__in=[pk for pk, _ in documents]
    ).values_list("document_id", "principal__kind", "principal__external_id"):
        (users if kind == Principal.Kind.USER else groups)[document_id].append(name)
    return {pk: SourceAcl.of(public=public, users=users[pk], groups=groups[pk]) for pk, public in documents}
