"""The absolute state of documents as an index must mirror it, read in one consistent snapshot."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db import connection, transaction

from knowledge.access.state import document_states
from knowledge.models import Document
from knowledge.store.advisory import repeatable_read
from retrieval_backends.types import DocumentState


@dataclass(frozen=True)
class Snapshot:
    """Document states and the `index_version` each was read at (what a push may mark clean)."""

    states: list[DocumentState]
    versions: dict[int, int]
    clean: set[int]  # documents whose version read was already pushed


def read_snapshot(*, document_ids: Sequence[int], with_chunks: bool) -> Snapshot:
    """The documents' states (and chunks) as of one instant: a repeatable-read transaction, so the
    version read is the version of everything read with it."""
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost:  # inside a caller's transaction its own isolation applies
            repeatable_read()
        synced = dict(Document.objects.filter(pk__in=document_ids).values_list("pk", "synced_version"))
        states = document_states(document_ids=list(synced), with_chunks=with_chunks)
    versions = {s.document_id: s.version for s in states}
    clean = {pk for pk, version in versions.items() if synced[pk] >= version}
    return Snapshot(states=states, versions=versions, clean=clean)
