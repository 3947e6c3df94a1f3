"""The retrieval-backend contract suite, shipped with the contract: capability mixins that a backend's
pytest class combines (see `contract`), over a small canonical corpus (`corpus`)."""

from retrieval_backends.testing.contract import (
    BackendContract,
    DimensionContract,
    ExternalBackendContract,
    ExternalIndexContract,
    GenerationContract,
    HealthContract,
    LaneContract,
    ScopeContract,
    TimeoutContract,
)
from retrieval_backends.testing.corpus import DIM, MODEL, Corpus, basis, build_corpus

__all__ = [
    "DIM",
    "MODEL",
    "BackendContract",
    "Corpus",
    "DimensionContract",
    "ExternalBackendContract",
    "ExternalIndexContract",
    "GenerationContract",
    "HealthContract",
    "LaneContract",
    "ScopeContract",
    "TimeoutContract",
    "basis",
    "build_corpus",
]
