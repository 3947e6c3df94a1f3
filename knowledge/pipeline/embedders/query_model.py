"""The local model's faster copy for search queries: int8 activations, built once per machine from it.

The shipped model stores int8 weights, but onnxruntime dequantizes them when it loads the session, so every
matrix product runs in float32. Dynamic quantization (`onnxruntime.quantization.quantize_dynamic`) quantizes
each product's input too, per call, and runs it on the CPU's int8 instructions. The FFN down projections stay
in float32: their input comes out of GELU, whose long tail dynamic quantization handles worst.

The copy is derived, never downloaded: it is built from the installed model into
`KNOWLEDGE_MODEL_CACHE_DIR` under a file lock (about 4 s), keyed by the model's content and the recipe.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings

logger = logging.getLogger(__name__)

# Bump when the recipe below changes: the cached copy's name carries it.
RECIPE = "dynamic-int8-per-channel-keep-ffn-down-v1"


class QueryModelUnavailable(Exception):
    """The quantized copy could not be built (the search then embeds queries with the shipped model)."""


def query_model_path(source: Path) -> Path:
    """The quantized copy of `source`, built first if this machine has none yet."""
    target = _target(source)
    if target.is_file():
        return target
    try:
        with _locked(target.with_suffix(".lock")):
            if not target.is_file():  # another process may have built it while we waited
                _build(source, target)
    except QueryModelUnavailable:
        raise
    except Exception as exc:  # onnx and onnxruntime raise their own untyped errors
        raise QueryModelUnavailable(f"building {target} failed: {exc}") from exc
    return target


def built_query_model(source: Path) -> Path | None:
    """The quantized copy of `source` if it has been built (nothing is built here)."""
    target = Path(settings.KNOWLEDGE_MODEL_CACHE_DIR) / _file_name(source)
    return target if target.is_file() else None


def _target(source: Path) -> Path:
    return _cache_dir() / _file_name(source)


def _file_name(source: Path) -> str:
    return f"query-{_fingerprint(source)}.onnx"


def _cache_dir() -> Path:
    path = Path(settings.KNOWLEDGE_MODEL_CACHE_DIR)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise QueryModelUnavailable(f"cannot create the model cache {path}: {exc}") from exc
    return path


def _fingerprint(source: Path) -> str:
    import onnxruntime

    digest = hashlib.sha256(f"{RECIPE}|onnxruntime {onnxruntime.__version__}|".encode())
    with source.open("rb") as model:
        for block in iter(lambda: model.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _build(source: Path, target: Path) -> None:
    try:
        import onnxruntime
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:  # onnxruntime's quantizer needs the `onnx` package
        raise QueryModelUnavailable(f"onnxruntime's quantizer is not installed: {exc}") from exc
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        folded, quantized = Path(tmp) / "folded.onnx", Path(tmp) / "quantized.onnx"
        # Constant folding turns the stored int8 weights and their scales into plain float32 initializers.
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        onnxruntime.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
        with _quiet_quantizer():
            quantize_dynamic(
                folded,
                quantized,
                weight_type=QuantType.QInt8,
                per_channel=True,
                op_types_to_quantize=["MatMul"],
                nodes_to_exclude=down_projections(folded),
            )
        os.replace(quantized, target)
    logger.info("built the quantized query model %s", target)


def down_projections(model_path: Path) -> list[str]:
    """Names of the MatMuls whose constant weight narrows (more rows than columns): the FFN outputs."""
    import onnx

    model = onnx.load(str(model_path), load_external_data=False)
    narrowing = {i.name for i in model.graph.initializer if len(i.dims) == 2 and i.dims[0] > i.dims[1]}
    return [n.name for n in model.graph.node if n.op_type == "MatMul" and narrowing & set(n.input)]


@contextmanager
def _quiet_quantizer() -> Iterator[None]:
    """The quantizer logs dozens of notes and a pre-processing hint through the root logger itself; a filter
    on the root logger sees only such direct calls (not records propagated from named loggers)."""

    def keep(record: logging.LogRecord) -> bool:
        return record.levelno >= logging.ERROR

    root = logging.getLogger()
    root.addFilter(keep)
    try:
        yield
    finally:
        root.removeFilter(keep)
