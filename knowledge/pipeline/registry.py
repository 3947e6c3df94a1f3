"""Resolves each pipeline layer (environment, then plugins.json, then default); builds it once per process."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from knowledge.pipeline.chunkers.base import Chunker
from knowledge.pipeline.compressors.base import Compressor
from knowledge.pipeline.embedders.base import Embedder
from knowledge.pipeline.fusers.base import Fuser
from knowledge.pipeline.rerankers.base import Reranker

PIPELINE = "knowledge.pipeline"
LAYERS: dict[str, tuple[type, dict[str, str]]] = {
    "embedder": (
        Embedder,
        {
            "hashing": f"{PIPELINE}.embedders.hashing.HashingEmbedder",
            "local": f"{PIPELINE}.embedders.local.LocalMiniLMEmbedder",
            "openai": f"{PIPELINE}.embedders.openai.OpenAIEmbedder",
            "ollama": f"{PIPELINE}.embedders.ollama.OllamaEmbedder",
        },
    ),
    "chunker": (
        Chunker,
        {
            "heading-prefix": f"{PIPELINE}.chunkers.heading_prefix.HeadingPrefixChunker",
            "fixed-size": f"{PIPELINE}.chunkers.fixed_size.FixedSizeChunker",
            "recursive": f"{PIPELINE}.chunkers.recursive.RecursiveChunker",
            "parent-child": f"{PIPELINE}.chunkers.parent_child.ParentChildChunker",
        },
    ),
    "fuser": (
        Fuser,
        {
            "zscore": f"{PIPELINE}.fusers.zscore.ZScoreFuser",
            "rrf": f"{PIPELINE}.fusers.rrf.RRFFuser",
            "weighted": f"{PIPELINE}.fusers.weighted.WeightedFuser",
            "dbsf": f"{PIPELINE}.fusers.dbsf.DBSFFuser",
        },
    ),
    "reranker": (
        Reranker,
        {"none": f"{PIPELINE}.rerankers.none.NoReranker", "mmr": f"{PIPELINE}.rerankers.mmr.MMRReranker"},
    ),
    "compressor": (
        Compressor,
        {
            "none": f"{PIPELINE}.compressors.none.NoCompressor",
            "tfidf": f"{PIPELINE}.compressors.tfidf.TfidfCompressor",
        },
    ),
}
DEFAULTS = {
    "embedder": "local",
    "chunker": "heading-prefix",
    "fuser": "zscore",
    "reranker": "none",
    "compressor": "none",
}


@dataclass(frozen=True)
class PluginChoice:
    """A layer's selected plugin: its name (alias or dotted path), options, and where the choice came from."""

    layer: str
    name: str
    options: dict[str, Any] = field(default_factory=dict)
    source: str = "default"

    @property
    def path(self) -> str:
        return LAYERS[self.layer][1].get(self.name, self.name)


def env_variable(layer: str) -> str:
    return f"KNOWLEDGE_{layer.upper()}"


def plugins_file() -> Path:
    return Path(getattr(settings, "KNOWLEDGE_PLUGINS_FILE", None) or Path(settings.BASE_DIR) / "plugins.json")


def _file_entry(layer: str, entry: object, origin: str) -> PluginChoice:
    if isinstance(entry, str) and entry.strip():
        return PluginChoice(layer, entry.strip(), {}, origin)
    if isinstance(entry, dict) and set(entry) <= {"class", "options"}:
        name, options = entry.get("class"), entry.get("options", {})
        if isinstance(name, str) and name.strip() and isinstance(options, dict):
            return PluginChoice(layer, name.strip(), options, origin)
    raise ImproperlyConfigured(
        f'{origin}: expected a name or dotted path, or {{"class": "dotted.path", "options": {{...}}}}, '
        f"got {entry!r}."
    )


def plugins_json() -> dict[str, Any]:
    """The parsed plugins file ({} when there is none)."""
    path = plugins_file()
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ImproperlyConfigured(f"{path}: cannot read the plugins file ({exc}).") from exc
    if not isinstance(raw, dict):
        raise ImproperlyConfigured(f"{path}: expected a JSON object mapping layer to plugin, got {raw!r}.")
    return raw


def file_choices() -> dict[str, PluginChoice]:
    """The layers chosen in plugins.json; a missing file chooses none (`stages` is read elsewhere)."""
    path = plugins_file()
    raw = {k: v for k, v in plugins_json().items() if k != "stages"}
    unknown = sorted(set(raw) - set(LAYERS))
    if unknown:
        raise ImproperlyConfigured(
            f"{path}: unknown layer(s) {', '.join(map(repr, unknown))}; layers are {', '.join(LAYERS)} "
            "(and 'stages')."
        )
    return {layer: _file_entry(layer, entry, f"{path} [{layer!r}]") for layer, entry in raw.items()}


def _env_choice(layer: str) -> str | None:
    """The environment's choice. A setting equal to the built-in default counts only if the variable is set
    (settings that read the variable with a non-None default cannot tell "unset" apart otherwise)."""
    value = (getattr(settings, env_variable(layer), None) or "").strip()
    if not value or (value == DEFAULTS[layer] and env_variable(layer) not in os.environ):
        return None
    return value


def configured_plugin(layer: str) -> PluginChoice:
    """The layer's plugin: the environment beats plugins.json, which beats the built-in default.

    When the environment names the same plugin as plugins.json, the file's options still apply.
    """
    if layer not in LAYERS:
        raise ImproperlyConfigured(f"unknown pipeline layer {layer!r}; layers are {', '.join(LAYERS)}.")
    from_file = file_choices().get(layer)
    name = _env_choice(layer)
    if name is not None:
        choice = PluginChoice(layer, name, {}, f"environment variable {env_variable(layer)}")
        same = from_file is not None and from_file.path == choice.path
        return PluginChoice(layer, name, from_file.options, choice.source) if same and from_file else choice
    return from_file or PluginChoice(layer, DEFAULTS[layer])


def configured_name(layer: str) -> str:
    """The configured plugin name (alias or dotted path) of a layer."""
    return configured_plugin(layer).name


def load_class(choice: PluginChoice) -> type:
    """Import the plugin class and check it belongs to the layer; ImproperlyConfigured says why not."""
    base, aliases = LAYERS[choice.layer]
    try:
        factory = import_string(choice.path)
    except ImportError as exc:
        raise ImproperlyConfigured(
            f"{choice.layer} {choice.name!r} (from {choice.source}): cannot import {choice.path!r} ({exc}). "
            f"Use one of {', '.join(sorted(aliases))}, or a dotted path to a {base.__name__} subclass."
        ) from exc
    if not (isinstance(factory, type) and issubclass(factory, base)):
        raise ImproperlyConfigured(
            f"{choice.layer} {choice.name!r} (from {choice.source}): {choice.path} is not a "
            f"{base.__module__}.{base.__name__} subclass, so it cannot be the {choice.layer}."
        )
    return factory


def build(layer: str, name: str | None = None, **options: Any) -> Any:
    """Instantiate a layer's plugin (the configured one, or `name`), with the configured and given options."""
    choice = configured_plugin(layer) if name is None else PluginChoice(layer, name, {}, "the caller")
    factory = load_class(choice)
    kwargs = {**choice.options, **options}
    try:
        return factory(**kwargs)
    except Exception as exc:  # a plugin's constructor may raise anything; say which plugin and options
        raise ImproperlyConfigured(
            f"{choice.layer} {choice.name!r} (from {choice.source}): cannot be built with options "
            f"{kwargs!r}: {exc}"
        ) from exc


@lru_cache(maxsize=1)
def get_chunker() -> Chunker:
    return build("chunker")  # type: ignore[no-any-return]


@lru_cache(maxsize=1)
def get_fuser() -> Fuser:
    return build("fuser")  # type: ignore[no-any-return]


@lru_cache(maxsize=1)
def get_reranker() -> Reranker:
    return build("reranker")  # type: ignore[no-any-return]


@lru_cache(maxsize=1)
def get_compressor() -> Compressor:
    return build("compressor")  # type: ignore[no-any-return]


def reset_pipeline() -> None:
    for getter in (get_chunker, get_fuser, get_reranker, get_compressor):
        getter.cache_clear()
