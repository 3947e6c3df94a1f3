"""Local ONNX sentence embedders run in-process with onnxruntime (offline, no PyTorch): a model from
the catalogue (local_models: all-MiniLM-L6-v2 by default, bge-small-en-v1.5) or a user's folder;
MiniLM's queries go through a quantized copy (query_model)."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings

from knowledge.pipeline.embedders.base import Embedder, EmbedderError
from knowledge.pipeline.embedders.local_models import (
    CATALOGUE,
    DEFAULT_MODEL,
    LocalModel,
    catalogue_model,
    folder_model,
)
from knowledge.pipeline.embedders.query_model import QueryModelUnavailable, query_model_path

if TYPE_CHECKING:
    import numpy as np
    from tokenizers import Tokenizer

logger = logging.getLogger(__name__)

# One text per run: on a pinned core, SciFact chunks embed 20-35 % faster one at a time than eight at a
# time (MiniLM 8.7 vs 7.1 chunks/s, bge-small 5.5 vs 4.2; two threads: no slower). A batch pads every
# text to its longest, and the int8 activation scales are computed over the whole run, padding
# included, so a batched chunk's vector also depended on its neighbours; memory grows with the batch.
BATCH_SIZE = 1
# The default model's packages (requirements/models.txt).
MODEL_PACKAGE = CATALOGUE[DEFAULT_MODEL].model[0]
TOKENIZER_PACKAGE = CATALOGUE[DEFAULT_MODEL].tokenizer[0]


@dataclass(frozen=True)
class _Runtime:
    session: Any  # onnxruntime.InferenceSession (the package ships no type information)
    tokenizer: Tokenizer


# (model, "documents" | "queries") -> session: "documents" runs the model's file, "queries" its
# quantized copy where the model has one (else the same session).
_runtimes: dict[tuple[str, str], _Runtime] = {}
_runtime_lock = threading.Lock()


def model_files() -> tuple[Path, Path]:
    """Paths of the default model's `model.onnx` and `tokenizer.json`; ImproperlyConfigured when missing."""
    model = catalogue_model(DEFAULT_MODEL)
    return model.model_file, model.tokenizer_file


def default_threads() -> int:
    """Intra-op threads: the setting, else the server's choice (gunicorn: 1), else the CPUs this process
    may run on."""
    configured = getattr(settings, "KNOWLEDGE_LOCAL_EMBEDDER_THREADS", 0)
    if configured:
        return int(configured)
    automatic = os.environ.get("KNOWLEDGE_LOCAL_EMBEDDER_AUTO_THREADS", "")
    if automatic.isascii() and automatic.isdigit() and int(automatic) > 0:
        return int(automatic)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _load_tokenizer(path: Path, max_tokens: int) -> Tokenizer:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path))
    # MiniLM's shipped tokenizer.json truncates and pads to 128 though the model was trained for 256;
    # padding to the longest text of each batch wastes less work than padding to a fixed length.
    tokenizer.enable_truncation(max_length=max_tokens)
    pad_id = tokenizer.token_to_id("[PAD]")
    tokenizer.enable_padding(pad_id=0 if pad_id is None else pad_id, pad_token="[PAD]")
    return tokenizer


def _load_session(path: Path, threads: int) -> Any:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    # Idle pool threads would otherwise spin for a while after each run, taking the CPU from the
    # PostgreSQL backend that serves the same search.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def get_runtime(threads: int | None = None, model: LocalModel | None = None) -> _Runtime:
    """The process-wide session of the model's file (the default model's when None), created on first
    use (the first caller's `threads`)."""
    model = model or catalogue_model(DEFAULT_MODEL)
    return _runtimes.get((_key(model), "documents")) or _created(model, "documents", threads)


def get_query_runtime(threads: int | None = None, model: LocalModel | None = None) -> _Runtime:
    """The session search queries use: the quantized copy (query_model) for a model that has one,
    unless the setting turns it off or it cannot be built; else the model's own."""
    model = model or catalogue_model(DEFAULT_MODEL)
    if not (model.query_copy and settings.KNOWLEDGE_LOCAL_EMBEDDER_QUERY_INT8):
        return get_runtime(threads, model)
    return _runtimes.get((_key(model), "queries")) or _created(model, "queries", threads)


def _key(model: LocalModel) -> str:
    """What a session depends on: the model's file and its tokenizer's file and length."""
    return f"{model.model_file}|{model.tokenizer_file}|{model.max_tokens}"


def _created(model: LocalModel, kind: str, threads: int | None) -> _Runtime:
    documents, key = (_key(model), "documents"), (_key(model), kind)
    with _runtime_lock:
        if key not in _runtimes:
            runtime = _query_runtime(model, threads) if kind == "queries" else None
            if runtime is None:  # the model's own session; queries share it when there is no copy
                runtime = _runtimes.get(documents) or _runtime_of(model.model_file, model, threads)
                _runtimes.setdefault(documents, runtime)
            _runtimes[key] = runtime
        return _runtimes[key]


def _runtime_of(file: Path, model: LocalModel, threads: int | None) -> _Runtime:
    session = _load_session(file, threads or default_threads())
    return _Runtime(session=session, tokenizer=_load_tokenizer(model.tokenizer_file, model.max_tokens))


def _query_runtime(model: LocalModel, threads: int | None) -> _Runtime | None:
    """The quantized copy's session, or None (with a warning) when it cannot be built or loaded."""
    try:
        return _runtime_of(query_model_path(model.model_file), model, threads)
    except QueryModelUnavailable as exc:
        reason = str(exc)
    except Exception as exc:  # onnxruntime's own errors: a copy it cannot load
        reason = f"the copy does not load: {exc}"
    logger.warning("search queries use the shipped model (slower): %s", reason)
    return None


def _mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    import numpy as np

    weights = mask[..., np.newaxis].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    pooled = summed / np.clip(weights.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return pooled / np.clip(norms, 1e-12, None)


def _cls_pool(hidden: np.ndarray) -> np.ndarray:
    import numpy as np

    pooled = hidden[:, 0, :]
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return pooled / np.clip(norms, 1e-12, None)


class LocalEmbedder(Embedder):
    """An ONNX sentence embedder in the process: `model` names a catalogue entry (all-MiniLM-L6-v2 by
    default: mean pooling, 256 tokens; bge-small-en-v1.5: CLS pooling, 512 tokens, a query prefix), or
    `path` a folder with model.onnx and tokenizer.json, described by `dimension`, `pooling`,
    `max_tokens`, `query_prefix` and, optionally, the `name` its vectors are recorded under. Vectors are
    L2-normalised.

    Its ONNX sessions are shared by every instance in the process and are thread-safe.
    """

    def __init__(
        self,
        *,
        model: str = DEFAULT_MODEL,
        path: str = "",
        dimension: int = 0,
        pooling: str = "mean",
        max_tokens: int = 256,
        query_prefix: str = "",
        name: str = "",
        batch_size: int = BATCH_SIZE,
        threads: int | None = None,
    ) -> None:
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size!r}")
        # Fail at configuration time, not on the first document.
        self.model = (
            folder_model(
                path,
                dimension=dimension,
                pooling=pooling,
                max_tokens=max_tokens,
                query_prefix=query_prefix,
                name=name,
            )
            if path
            else catalogue_model(model)
        )
        self.name = self.model.name
        self.dimension = self.model.dimension
        self.batch_size = batch_size
        self.threads = threads

    def prepare(self) -> None:
        get_query_runtime(self.threads, self.model)  # builds MiniLM's quantized copy the first time

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        return self._embed_all(get_runtime(self.threads, self.model), texts)

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        # One at a time: the int8 scales are computed per run over the whole input, padding included, so
        # in a batch a question's vector would depend on the other questions.
        runtime = get_query_runtime(self.threads, self.model)
        prefix = self.model.query_prefix
        return [self._embed_chunk(runtime, [prefix + text])[0] for text in texts]

    def _embed_all(self, runtime: _Runtime, texts: Sequence[str]) -> list[list[float]]:
        # Similar lengths in one batch keep padding (wasted work) small; results are put back in order.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors: list[list[float]] = [[] for _ in texts]
        for start in range(0, len(order), self.batch_size):
            positions = order[start : start + self.batch_size]
            batch = self._embed_chunk(runtime, [texts[i] for i in positions])
            for position, vector in zip(positions, batch, strict=True):
                vectors[position] = vector
        return vectors

    def _embed_chunk(self, runtime: _Runtime, texts: list[str]) -> list[list[float]]:
        import numpy as np

        encodings = runtime.tokenizer.encode_batch(texts)
        input_ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        types = np.zeros_like(input_ids)
        available = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": types}
        feeds = {i.name: available[i.name] for i in runtime.session.get_inputs() if i.name in available}
        outputs = [o.name for o in runtime.session.get_outputs()]
        wanted = "last_hidden_state" if "last_hidden_state" in outputs else outputs[0]
        try:
            (hidden,) = runtime.session.run([wanted], feeds)
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise EmbedderError(f"{self.name}: inference failed: {exc}", permanent=True) from exc
        if hidden.shape[-1] != self.dimension:
            raise EmbedderError(
                f"{self.name}: the model gives {hidden.shape[-1]} dimensions, configured {self.dimension}",
                permanent=True,
            )
        pooled = _cls_pool(hidden) if self.model.pooling == "cls" else _mean_pool(hidden, mask)
        vectors: list[list[float]] = pooled.tolist()
        return vectors


class LocalMiniLMEmbedder(LocalEmbedder):
    """The default model under the class name earlier settings files and plugins.json name."""
