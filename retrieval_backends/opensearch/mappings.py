"""Index names, settings and mappings: one text index and one vector index per dimension.

Each is an alias over a physical index of a generation (`<alias>-g<N>`), so a rebuild writes a new
generation and swaps every alias in one atomic call. Chunks are mirrored under their canonical id
(`_id` = chunk id; a vector document is `<chunk id>.<model key>`), with every filter field.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any

# Our language names (PostgreSQL text-search configurations) -> OpenSearch analyzers.
ANALYZERS = {
    "arabic": "arabic",
    "armenian": "armenian",
    "basque": "basque",
    "catalan": "catalan",
    "danish": "danish",
    "dutch": "dutch",
    "english": "english",
    "finnish": "finnish",
    "french": "french",
    "german": "german",
    "greek": "greek",
    "hindi": "hindi",
    "hungarian": "hungarian",
    "indonesian": "indonesian",
    "irish": "irish",
    "italian": "italian",
    "lithuanian": "lithuanian",
    "norwegian": "norwegian",
    "portuguese": "portuguese",
    "romanian": "romanian",
    "russian": "russian",
    "spanish": "spanish",
    "swedish": "swedish",
    "turkish": "turkish",
    "simple": "standard",  # lower-cased words, no stemming or stop words, as PostgreSQL's `simple`
}
FALLBACK_ANALYZER = "standard"
FILTER_FIELDS: dict[str, Any] = {
    "chunk_id": {"type": "long"},
    "document_id": {"type": "long"},
    "chunk_index": {"type": "integer"},
    "tenant_id": {"type": "long"},
    "connector_id": {"type": "long"},
    "environment_id": {"type": "long"},
    "acl_tokens": {"type": "keyword"},
    "is_deleted": {"type": "boolean"},
    "language": {"type": "keyword"},
    "doc_version": {"type": "long"},  # the document version that wrote the entry (writes.py)
}
# Fields added after indices existed: put into older indices' mappings on first use.
ADDED_FIELDS: dict[str, Any] = {"doc_version": {"type": "long"}}
MARKER_FIELDS: dict[str, Any] = {"marker_of": {"type": "long"}}
BYTE_SUFFIX = "-byte"


def as_bytes(vector: Sequence[float]) -> list[int]:
    """A vector as lucene byte-vector components: scaled so its largest component is +-127, then
    rounded. Cosine similarity does not depend on a vector's length, so only the rounding is lost."""
    largest = max((abs(v) for v in vector), default=0.0)
    scale = 127.0 / largest if largest > 0 else 0.0
    return [max(-128, min(127, round(v * scale))) for v in vector]


def analyzer_for(language: str) -> str:
    return ANALYZERS.get(language, FALLBACK_ANALYZER)


def text_fields(language: str) -> tuple[str, str]:
    """The (title, text) fields a chunk in this language is indexed in."""
    analyzer = analyzer_for(language)
    return f"title_{analyzer}", f"text_{analyzer}"


def model_key(model: str) -> str:
    """A short stable key for an embedding model name (in document ids)."""
    return hashlib.sha1(model.encode("utf-8")).hexdigest()[:12]


class Names:
    """Alias and physical index names under one prefix."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    @property
    def chunks(self) -> str:
        return f"{self.prefix}-chunks"

    def vectors(self, dimensions: int, storage: str = "vector") -> str:
        """A dimension's vector index; `halfvec` storage has its own, of byte vectors."""
        suffix = BYTE_SUFFIX if storage == "halfvec" else ""
        return f"{self.prefix}-vectors-{int(dimensions)}{suffix}"

    @property
    def all_aliases(self) -> str:
        return f"{self.prefix}-chunks,{self.prefix}-vectors-*"

    def physical(self, alias: str, generation: int) -> str:
        return f"{alias}-g{generation}"

    def generation_of(self, physical: str) -> int:
        match = re.search(r"-g(\d+)$", physical)
        return int(match.group(1)) if match else 0

    def dimensions_of(self, alias: str) -> int | None:
        space = self.space_of(alias)
        return space[0] if space else None

    def space_of(self, alias: str) -> tuple[int, str] | None:
        """(dimensions, storage) of a vector alias; None for any other name."""
        match = re.fullmatch(re.escape(self.prefix) + r"-vectors-(\d+)(" + BYTE_SUFFIX + ")?", alias)
        if match is None:
            return None
        return int(match.group(1)), "halfvec" if match.group(2) else "vector"


def index_settings() -> dict[str, Any]:
    # One shard per index (these are per deployment, not per tenant); a replica once a second node
    # joins, none on a single node (so it stays green).
    return {"number_of_shards": 1, "auto_expand_replicas": "0-1", "refresh_interval": "1s"}


def chunks_body() -> dict[str, Any]:
    properties = {**FILTER_FIELDS, **MARKER_FIELDS}
    for analyzer in sorted({*ANALYZERS.values(), FALLBACK_ANALYZER}):
        properties[f"title_{analyzer}"] = {"type": "text", "analyzer": analyzer}
        properties[f"text_{analyzer}"] = {"type": "text", "analyzer": analyzer}
    return {
        "settings": {"index": index_settings()},
        "mappings": {"dynamic": "strict", "properties": properties},
    }


def vectors_body(dimensions: int, storage: str = "vector") -> dict[str, Any]:
    vector: dict[str, Any] = {
        "type": "knn_vector",
        "dimension": int(dimensions),
        "method": {"name": "hnsw", "engine": "lucene", "space_type": "cosinesimil"},
    }
    if storage == "halfvec":  # a byte a dimension (lucene has no fp16 encoding; faiss's is native code)
        vector["data_type"] = "byte"
    properties = {**FILTER_FIELDS, "model": {"type": "keyword"}, "vector": vector}
    # The vector is indexed, never read back (PostgreSQL holds it): kept out of the stored source,
    # where its JSON text was about half of a vector index's bytes.
    mappings = {"dynamic": "strict", "_source": {"excludes": ["vector"]}, "properties": properties}
    return {"settings": {"index": {**index_settings(), "knn": True}}, "mappings": mappings}
