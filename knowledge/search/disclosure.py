"""Who may see the keyword lane's scores: BM25 statistics count chunks the caller cannot see.

A raw BM25 score (`text_rank`) lets a caller estimate how many hidden chunks of the tenant contain a
term. With KNOWLEDGE_KEYWORD_SCORES=bypass (the default) only a search that bypasses the ACLs (or a
staff user who may) sees them; `everyone` shows them to every caller. What stays is relative: the
order, the lanes' ranks, and the fused score, which every fuser computes from ranks (RRF) or from
scores normalised within the answer (z-score, DBSF, min-max), so the scale that carries a term's
document frequency cancels out. Similarities stay (they depend on the chunk and the question alone).
The ranking is the same either way.
"""

from __future__ import annotations

import dataclasses

from django.conf import settings

from knowledge.search.results import SearchHit


def disclosed(hits: list[SearchHit], *, bypass_acl: bool) -> list[SearchHit]:
    """The hits as this caller may see them: keyword-lane scores withheld unless it may bypass the
    ACLs or the setting shows them to everyone (ranks stay)."""
    if bypass_acl or settings.KNOWLEDGE_KEYWORD_SCORES == "everyone":
        return hits
    return [dataclasses.replace(hit, text_rank=None) for hit in hits]
