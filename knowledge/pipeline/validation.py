"""Checks that each configured pipeline plugin satisfies its layer's contract (system check and doctor)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from knowledge.pipeline.chunkers.base import ChunkSource
from knowledge.pipeline.fusers.base import FusedHit
from knowledge.pipeline.registry import LAYERS, build, configured_plugin, load_class
from knowledge.pipeline.types import Candidate, Query
from knowledge.plugins import PluginSpec
from retrieval_backends.types import LaneHit

REQUIRED_METHOD = {
    "embedder": "embed_batch",
    "chunker": "chunk",
    "fuser": "fuse",
    "reranker": "rerank",
    "compressor": "compress",
}


@dataclass(frozen=True)
class LayerReport:
    """One layer's outcome: the plugin chosen (when the configuration could be read) and its problems."""

    layer: str
    choice: PluginSpec | None
    problems: tuple[str, ...]
    detail: str = ""

    @property
    def ok(self) -> bool:
        return not self.problems


def validate_pipeline(*, deep: bool = False) -> list[LayerReport]:
    """Every layer's report. `deep` also exercises each plugin once (the embedder embeds a short text)."""
    return [validate_layer(layer, deep=deep) for layer in LAYERS]


def validate_layer(layer: str, *, deep: bool = False) -> LayerReport:
    """Problems of the layer's configured plugin, each starting with `<layer> '<name>' (from <source>):`."""
    try:
        choice = configured_plugin(layer)
    except ImproperlyConfigured as exc:
        return LayerReport(layer, None, (f"{layer} configuration: {exc}",))
    try:
        cls = load_class(choice)
    except ImproperlyConfigured as exc:
        return LayerReport(layer, choice, (str(exc),))
    label = f"{layer} {choice.name!r} (from {choice.origin}): "
    base, method = LAYERS[layer].base, REQUIRED_METHOD[layer]
    if getattr(cls, method, None) is getattr(base, method):
        missing = f"{choice.path} does not implement {method}(), which every {base.__name__} must provide."
        return LayerReport(layer, choice, (label + missing,))
    try:
        instance = build(layer)
    except ImproperlyConfigured as exc:  # build() turns any constructor failure into this
        return LayerReport(layer, choice, (str(exc),))
    problems = ATTRIBUTE_CHECKS.get(layer, _no_problems)(instance)
    if deep and not problems:
        problems = _exercise(layer, instance)
    return LayerReport(layer, choice, tuple(label + p for p in problems), _describe(layer, instance))


def _no_problems(instance: Any) -> list[str]:
    return []


def _describe(layer: str, instance: Any) -> str:
    if layer == "embedder":
        return f"model {instance.name}, {instance.dimension} dimensions"
    return type(instance).__name__


def embedder_attributes(embedder: Any) -> list[str]:
    problems = []
    dimension = getattr(embedder, "dimension", None)
    if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension <= 0:
        problems.append(f"the embedder's dimension must be a positive int, got {dimension!r}.")
    name = getattr(embedder, "name", None)
    if not isinstance(name, str) or not name.strip() or name == "base":
        problems.append(
            f"the embedder's name must identify its model (it is stored with every vector), got {name!r}."
        )
    return problems


def reranker_attributes(reranker: Any) -> list[str]:
    flag = getattr(reranker, "needs_embeddings", None)
    return [] if isinstance(flag, bool) else [f"needs_embeddings must be a bool, got {flag!r}."]


ATTRIBUTE_CHECKS: dict[str, Callable[[Any], list[str]]] = {
    "embedder": embedder_attributes,
    "reranker": reranker_attributes,
}


def _exercise(layer: str, instance: Any) -> list[str]:
    try:
        return EXERCISES[layer](instance)
    except Exception as exc:  # the plugin failed on a trivial input: that is the finding
        return [f"{type(instance).__name__}.{REQUIRED_METHOD[layer]}() failed: {type(exc).__name__}: {exc}"]


def exercise_embedder(embedder: Any) -> list[str]:
    vectors = embedder.embed_batch(["doctor: a short test sentence"])
    if not isinstance(vectors, list) or len(vectors) != 1:
        return [f"embed_batch() of one text must return a list of one vector, got {_summary(vectors)}."]
    vector = vectors[0]
    if len(vector) != embedder.dimension:
        return [
            f"embed_batch() returned a vector of {len(vector)} values, but dimension is {embedder.dimension}."
        ]
    if not all(isinstance(v, int | float) and math.isfinite(v) for v in vector):
        return ["embed_batch() returned a vector with non-numeric or non-finite values."]
    return []


def exercise_chunker(chunker: Any) -> list[str]:
    chunks = chunker.chunk(ChunkSource(title="Doctor", content="# One\nFirst part.\n\n## Two\nSecond part."))
    indexes = [c.index for c in chunks]
    if not chunks or indexes != list(range(len(chunks))):
        return [f"chunk() must number chunks 0..n-1 and return some for non-empty text, got {indexes}."]
    bad = [c.index for c in chunks if c.parent_index is not None and c.parent_index not in indexes]
    return [f"chunk() returned parent_index values that name no chunk (chunks {bad})."] if bad else []


def _hit(chunk_id: int, score: float) -> LaneHit:
    return LaneHit(chunk_id=chunk_id, document_id=1, chunk_index=chunk_id, score=score, content="Some text.")


def exercise_fuser(fuser: Any) -> list[str]:
    fused = fuser.fuse({"vector": [_hit(1, 0.9), _hit(2, 0.5)], "keyword": [_hit(2, 3.0)]})
    if not all(isinstance(f, FusedHit) for f in fused) or sorted(f.chunk_id for f in fused) != [1, 2]:
        return [f"fuse() must return one FusedHit per chunk of the lanes, got {_summary(fused)}."]
    return []


def _candidates() -> list[Candidate]:
    return [
        Candidate(chunk_id=i, document_id=1, chunk_index=i, content=f"Sentence {i}. More.", score=1.0 / i)
        for i in (1, 2, 3)
    ]


def exercise_reranker(reranker: Any) -> list[str]:
    pool = _candidates()
    ranked = reranker.rerank(Query(text="sentence"), pool, 2)
    if len(ranked) > 2 or any(c not in pool for c in ranked):
        return [f"rerank() must return at most `limit` of the given hits, got {_summary(ranked)}."]
    return []


def exercise_compressor(compressor: Any) -> list[str]:
    pool = _candidates()
    compressed = compressor.compress(Query(text="sentence"), pool, 3)
    ids = [c.chunk_id for c in compressed]
    if not ids or ids != [c.chunk_id for c in pool[: len(ids)]]:
        return [f"compress() must return a non-empty prefix of the hits, got chunk ids {ids}."]
    return []


EXERCISES: dict[str, Callable[[Any], list[str]]] = {
    "embedder": exercise_embedder,
    "chunker": exercise_chunker,
    "fuser": exercise_fuser,
    "reranker": exercise_reranker,
    "compressor": exercise_compressor,
}


def _summary(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."
