"""Who may see the keyword lane's scores: BM25 statistics count chunks the caller cannot see.

A raw BM25 score lets a caller estimate how many hidden chunks of the tenant contain a term. With
KNOWLEDGE_KEYWORD_SCORES=bypass (the default) only a search that bypasses the ACLs (or a staff user
who may) sees them; `everyone` shows them to every caller. The ranking is the same either way.
"""

from __future__ import annotations

import dataclasses

from django.conf import settings

from knowledge.search.results import SearchHit


def keyword_scores_shown(*, bypass_acl: bool) -> bool:
    """Whether this caller may see scores computed from the tenant's keyword statistics."""
    return bypass_acl or settings.KNOWLEDGE_KEYWORD_SCORES == "everyone"


def without_keyword_score(hit: SearchHit) -> SearchHit:
    """The hit with its keyword-lane score withheld (its rank stays)."""
    return dataclasses.replace(hit, text_rank=None)
