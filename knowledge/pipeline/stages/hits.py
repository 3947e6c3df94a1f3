"""Hit stages: parent expansion, extractive compression, diversity with a source penalty, recency decay,
and the configured reranker and compressor as stages."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

import numpy as np
from django.conf import settings
from django.utils import timezone
from django.utils.dateparse import parse_datetime, parse_duration

from knowledge.pipeline.compressors.base import Compressor
from knowledge.pipeline.compressors.none import NoCompressor
from knowledge.pipeline.fusers.base import FusedHit
from knowledge.pipeline.llm import ChatClient, LlmError
from knowledge.pipeline.registry import get_compressor, get_reranker
from knowledge.pipeline.rerankers.base import Reranker
from knowledge.pipeline.rerankers.none import NoReranker
from knowledge.pipeline.stages.base import HitStage, StageError
from knowledge.pipeline.stages.types import StageContext, StageHit

SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
WORD = re.compile(r"\w+")


class ParentExpand(HitStage):
    """Children answer with their parent's text attached (`parent_content`), one hit per parent; the
    child keeps its own citation. Options: `max_parent_chars` (2000), `missing` (`warn` or `ignore`)."""

    name = "parent_expand"

    def reads_pool(self, fused: Sequence[FusedHit]) -> bool:
        return any(f.hit.parent_index is not None for f in fused)  # one hit per parent: may shrink

    def run(self, hits: Sequence[StageHit], context: StageContext) -> list[StageHit]:
        data = context.store()
        indexes = data.parent_indexes([h.fused for h in hits if h.fused is not None])
        parent_of = {h.chunk_id: (h.document_id, indexes[h.chunk_id]) for h in hits if h.chunk_id in indexes}
        if not parent_of:
            return list(hits)
        text = data.visible_chunk_texts(context.scope, set(parent_of.values()))
        limit = int(self.options.get("max_parent_chars", 2000))
        out, seen = [], set()
        for hit in hits:
            key = parent_of.get(hit.chunk_id)
            if key is None:
                out.append(hit)
            elif key not in seen:
                seen.add(key)
                if key not in text and self.options.get("missing", "warn") == "warn":
                    context.warnings.append(f"the parent of chunk {hit.chunk_id} is missing or not visible")
                out.append(replace(hit, parent_content=text[key][:limit]) if key in text else hit)
        return out


def excerpts(content: str, query: str, max_chars: int) -> list[str]:
    """The chunk's sentences that share words with the query, best first until `max_chars`, returned
    in text order; each is an exact substring of `content`."""
    terms = {w.lower() for w in WORD.findall(query)}
    spans = [(m.start(), m.end()) for m in SENTENCE.finditer(content) if m.group().strip()]
    scored = [(len({w.lower() for w in WORD.findall(content[a:b])} & terms), -a, (a, b)) for a, b in spans]
    chosen, used = [], 0
    for overlap, _, (a, b) in sorted(scored, reverse=True):
        piece = content[a:b].strip()
        if overlap and used + len(piece) <= max_chars:
            chosen.append((a, piece))
            used += len(piece)
    return [piece for _, piece in sorted(chosen)]


class Compress(HitStage):
    """Quote-safe excerpts: each hit's content becomes its query-relevant sentences (exact substrings of
    the chunk), at most `max_chars_per_hit` (600). Hits left empty are dropped (`drop_empty`, true).
    `mode: "llm"` asks an LLM to pick the excerpts; anything that is not a substring is discarded."""

    name = "compress"

    def run(self, hits: Sequence[StageHit], context: StageContext) -> list[StageHit]:
        limit = int(self.options.get("max_chars_per_hit", 600))
        out = []
        for hit in hits:
            pieces = self._pieces(hit.content, context, limit)
            if pieces:
                out.append(replace(hit, content=" … ".join(pieces), excerpts=tuple(pieces)))
            elif not self.options.get("drop_empty", True):
                out.append(hit)
        return out

    def _pieces(self, content: str, context: StageContext, limit: int) -> list[str]:
        if self.options.get("mode", "extractive") != "llm":
            return excerpts(content, context.query.text or "", limit)
        schema = {
            "type": "object",
            "additionalProperties": False,
            "required": ["excerpts"],
            "properties": {"excerpts": {"type": "array", "items": {"type": "string"}}},
        }
        prompt = "Quote, word for word, the passages of the text that answer the question. Never paraphrase."
        try:
            answer = ChatClient.from_settings().complete_json(
                system=prompt, user=f"Question: {context.query.text}\n\nText:\n{content}", schema=schema,
                name="excerpts", budget=context.budget,
            )  # fmt: skip
        except LlmError as exc:
            raise StageError(exc.summary) from exc
        kept = [
            p.strip()
            for p in answer.get("excerpts") or []
            if isinstance(p, str) and p.strip() and p.strip() in content
        ]
        return [p for p in kept if len(p) <= limit][:8]


class Diversify(HitStage):
    """Maximal Marginal Relevance over the chunk vectors, minus `source_penalty` for every earlier pick
    from the same document. Options: `lambda` (0.7), `limit` (the search's), `source_penalty` (0.1)."""

    name = "diversify"

    def run(self, hits: Sequence[StageHit], context: StageContext) -> list[StageHit]:
        if not hits:
            return []
        lam, penalty = float(self.options.get("lambda", 0.7)), float(self.options.get("source_penalty", 0.1))
        limit = int(self.options.get("limit", context.limit))
        vectors = _vectors(hits, context)
        scores = np.array([h.score for h in hits], dtype=float)
        spread = scores.max() - scores.min()
        relevance = (scores - scores.min()) / spread if spread > 0 else np.ones_like(scores)
        similar = vectors @ vectors.T if vectors is not None else np.zeros((len(hits), len(hits)))
        documents = np.array([h.document_id for h in hits])
        closest, repeats = np.zeros(len(hits)), np.zeros(len(hits))
        picked: list[int] = []
        for _ in range(min(limit, len(hits))):
            value = lam * relevance - (1 - lam) * closest - penalty * repeats
            value[picked] = -np.inf
            best = int(np.argmax(value))  # ties: the earlier (better-ranked) hit
            picked.append(best)
            closest = np.maximum(closest, similar[best])
            repeats += documents == documents[best]
        return [hits[i] for i in picked]


def _vectors(hits: Sequence[StageHit], context: StageContext) -> np.ndarray | None:
    query = context.query
    if query.embedding is None:
        return None
    found = context.store().chunk_vectors([h.chunk_id for h in hits], len(query.embedding), query.model)
    if len(found) < len(hits):
        return None
    matrix = np.array([found[h.chunk_id] for h in hits], dtype=float)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)


DEFAULT_HALF_LIFE = "30 00:00:00"
MIN_HALF_LIFE, MAX_HALF_LIFE = timedelta(seconds=1), timedelta(days=36500)
DEFAULT_FIELD = "source_updated_at"
DOCUMENT_FIELDS = {"source_updated_at", "updated_at"}  # the rest: metadata.<path>


class Decay(HitStage):
    """Exponential recency decay: score × 0.5^(age / `half_life`) on `field` (`source_updated_at`,
    `updated_at` or `metadata.<path>`); `missing`: `ignore` (keep the score) or `drop`."""

    name = "decay"

    def options_problem(self) -> str | None:
        try:
            _duration(self.options.get("half_life", DEFAULT_HALF_LIFE))
            _check_field(str(self.options.get("field", DEFAULT_FIELD)))
        except StageError as exc:
            return str(exc)
        return None

    def run(self, hits: Sequence[StageHit], context: StageContext) -> list[StageHit]:
        half_life = _duration(self.options.get("half_life", DEFAULT_HALF_LIFE))
        field_name = str(self.options.get("field", DEFAULT_FIELD))
        stamps = _timestamps(context, {h.document_id for h in hits}, field_name)
        now, out = timezone.now(), []
        for hit in hits:
            stamp = stamps.get(hit.document_id)
            if stamp is None:
                if self.options.get("missing", "ignore") == "drop":
                    continue
                out.append(hit)
                continue
            out.append(replace(hit, score=hit.score * 0.5 ** (_age(now, stamp) / half_life.total_seconds())))
        return sorted(out, key=lambda h: (-h.score, h.chunk_id))


def _duration(value: Any) -> timedelta:
    try:
        parsed = value if isinstance(value, timedelta) else parse_duration(str(value))
    except (OverflowError, ValueError):  # '99999999999 00:00:00' is well-formed but no timedelta
        parsed = None
    if parsed is None or not MIN_HALF_LIFE <= parsed <= MAX_HALF_LIFE:
        raise StageError(
            f"half_life must be a duration from 1 second to {MAX_HALF_LIFE.days} days such as "
            f"'7 00:00:00', got {value!r}"
        )
    return parsed


def _age(now: datetime, stamp: datetime) -> float:
    """Seconds since `stamp`; a stamp in the future counts as now."""
    try:
        return max(0.0, (now - stamp).total_seconds())
    except OverflowError:  # a stamp near datetime.min whose offset takes it out of range
        return 0.0


def _check_field(field_name: str) -> None:
    if field_name not in DOCUMENT_FIELDS and not (
        field_name.startswith("metadata.") and len(field_name) > len("metadata.")
    ):
        raise StageError(
            f"field must be source_updated_at, updated_at or metadata.<path>, got {field_name!r}"
        )


def _timestamps(context: StageContext, document_ids: set[int], field_name: str) -> dict[int, datetime]:
    _check_field(field_name)
    values = context.store().document_values(document_ids, field_name)
    if field_name in DOCUMENT_FIELDS:
        return {pk: value for pk, value in values.items() if isinstance(value, datetime)}
    found = {}
    for pk, value in values.items():
        stamp = _stamp(value)
        if stamp is not None:
            found[pk] = stamp if stamp.tzinfo else timezone.make_aware(stamp, UTC)
    return found


def _stamp(value: Any) -> datetime | None:
    """A metadata timestamp; None for anything that is not a valid ISO 8601 date and time (a day that
    does not exist, an offset of 24 hours or more): the hit counts as having no date."""
    if not isinstance(value, str) or len(value) > 64:
        return None
    try:
        return parse_datetime(value)
    except (ValueError, OverflowError):
        return None


class _LayerStage(HitStage):
    """A configured layer as a stage: the `instance` option, else the configured one. It chooses among
    the hits (reads_pool) unless it is the layer's pass-through."""

    passthrough: ClassVar[type]

    def reads_pool(self, fused: Sequence[FusedHit]) -> bool:
        return not isinstance(self._layer(), self.passthrough)

    def _layer(self) -> Any:
        return self.options.get("instance") or self._configured()

    @staticmethod
    def _configured() -> Any:
        raise NotImplementedError


class RerankerStage(_LayerStage):
    """The configured reranker (KNOWLEDGE_RERANKER; `none` by default) as a stage."""

    name = "reranker"
    passthrough = NoReranker

    @staticmethod
    def _configured() -> Reranker:
        return get_reranker()

    def run(self, hits: Sequence[StageHit], context: StageContext) -> list[StageHit]:
        reranker = self._layer()
        pool = list(hits)
        if reranker.needs_embeddings and context.query.embedding is not None:
            found = context.store().chunk_vectors(
                [h.chunk_id for h in pool], len(context.query.embedding), context.query.model
            )
            pool = [replace(h, embedding=found.get(h.chunk_id)) for h in pool]
        return list(reranker.rerank(context.query, pool, context.limit))


class CompressorStage(_LayerStage):
    """The configured compressor (KNOWLEDGE_COMPRESSOR; `none` by default) within the token budget."""

    name = "compressor"
    passthrough = NoCompressor

    @staticmethod
    def _configured() -> Compressor:
        return get_compressor()

    def run(self, hits: Sequence[StageHit], context: StageContext) -> list[StageHit]:
        compressor = self._layer()
        budget = int(self.options.get("token_budget") or settings.KNOWLEDGE_TOKEN_BUDGET)
        return list(compressor.compress(context.query, list(hits), budget))
