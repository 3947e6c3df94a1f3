"""Resolves each pipeline layer (environment, then plugins.json, then default) on the shared plugin
loader; aliases and their options are settings.KNOWLEDGE_PLUGINS[layer]. Built once per process."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from knowledge.pipeline.chunkers.base import Chunker
from knowledge.pipeline.compressors.base import Compressor
from knowledge.pipeline.embedders.base import Embedder
from knowledge.pipeline.fusers.base import Fuser
from knowledge.pipeline.rerankers.base import Reranker
from knowledge.plugins import Plugins, PluginSpec, process_singleton

LAYERS: dict[str, Plugins[Any]] = {
    layer: Plugins(layer, base, "KNOWLEDGE_PLUGINS", layer)
    for layer, base in (
        ("embedder", Embedder),
        ("chunker", Chunker),
        ("fuser", Fuser),
        ("reranker", Reranker),
        ("compressor", Compressor),
    )
}
DEFAULTS = {
    "embedder": "local",
    "chunker": "heading-prefix",
    "fuser": "zscore",
    "reranker": "none",
    "compressor": "none",
}


def env_variable(layer: str) -> str:
    return f"KNOWLEDGE_{layer.upper()}"


def plugins_file() -> Path:
    return Path(getattr(settings, "KNOWLEDGE_PLUGINS_FILE", None) or Path(settings.BASE_DIR) / "plugins.json")


def file_entry(entry: object) -> object:
    """A plugins.json entry in the loader's shape: the legacy lowercase `class`/`options` keys become
    `CLASS`/`OPTIONS` (names and uppercase entries pass unchanged)."""
    if isinstance(entry, dict) and entry and set(entry) <= {"class", "options"}:
        return {"CLASS": entry.get("class"), "OPTIONS": entry.get("options", {})}
    return entry


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


def file_choices() -> dict[str, PluginSpec]:
    """The layers chosen in plugins.json; a missing file chooses none (`stages` is read elsewhere)."""
    path = plugins_file()
    raw = {k: v for k, v in plugins_json().items() if k != "stages"}
    unknown = sorted(set(raw) - set(LAYERS))
    if unknown:
        raise ImproperlyConfigured(
            f"{path}: unknown layer(s) {', '.join(map(repr, unknown))}; layers are {', '.join(LAYERS)} "
            "(and 'stages')."
        )
    return {
        layer: LAYERS[layer].spec(file_entry(entry), f"{path} [{layer!r}]") for layer, entry in raw.items()
    }


def _env_choice(layer: str) -> str | None:
    """The environment's choice. A setting equal to the built-in default counts only if the variable is set
    (settings that read the variable with a non-None default cannot tell "unset" apart otherwise)."""
    value = (getattr(settings, env_variable(layer), None) or "").strip()
    if not value or (value == DEFAULTS[layer] and env_variable(layer) not in os.environ):
        return None
    return value


def configured_plugin(layer: str) -> PluginSpec:
    """The layer's plugin: the environment beats plugins.json, which beats the built-in default.

    When the environment names the same plugin as plugins.json, the file's options still apply.
    """
    if layer not in LAYERS:
        raise ImproperlyConfigured(f"unknown pipeline layer {layer!r}; layers are {', '.join(LAYERS)}.")
    plugins = LAYERS[layer]
    from_file = file_choices().get(layer)
    name = _env_choice(layer)
    if name is not None:
        choice = plugins.spec(name, f"environment variable {env_variable(layer)}")
        if from_file is not None and from_file.path == choice.path:
            options = {**choice.options, **from_file.options}
            return PluginSpec(layer, name, choice.path, options, choice.origin)
        return choice
    return from_file or plugins.spec(DEFAULTS[layer], "default")


def configured_name(layer: str) -> str:
    """The configured plugin name (alias or dotted path) of a layer."""
    return configured_plugin(layer).name


def load_class(choice: PluginSpec) -> type:
    """Import the plugin class and check it belongs to the layer; ImproperlyConfigured says why not."""
    return LAYERS[choice.kind].load(choice)


def build(layer: str, name: str | None = None, **options: Any) -> Any:
    """Instantiate a layer's plugin (the configured one, or `name` with its alias's options), with the
    given options over them."""
    choice = configured_plugin(layer) if name is None else LAYERS[layer].spec(name, "the caller")
    return LAYERS[layer].build(choice, **options)


@process_singleton
def get_chunker() -> Chunker:
    return build("chunker")  # type: ignore[no-any-return]


@process_singleton
def get_fuser() -> Fuser:
    return build("fuser")  # type: ignore[no-any-return]


@process_singleton
def get_reranker() -> Reranker:
    return build("reranker")  # type: ignore[no-any-return]


@process_singleton
def get_compressor() -> Compressor:
    return build("compressor")  # type: ignore[no-any-return]


def reset_pipeline() -> None:
    for getter in (get_chunker, get_fuser, get_reranker, get_compressor):
        getter.cache_clear()  # type: ignore[union-attr]
