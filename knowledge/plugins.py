"""One plugin loader for every pluggable part (retrieval backends, pipeline layers, stages, connector
kinds): `{"CLASS": ..., "OPTIONS": {...}}` per alias, in the manner of Django's STORAGES and CACHES.

A kind's aliases come from a settings mapping (alias -> entry). A choice names an alias, a dotted
path, or is itself an entry whose `CLASS` is an alias or a dotted path; its `OPTIONS` are laid over
the alias's. Every process-wide instance built from a choice is made by a `process_singleton`, so
one `reset_process_singletons()` forgets them all (tests, settings changes).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Generic, TypeVar

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])
ENTRY_KEYS = frozenset({"CLASS", "OPTIONS"})


@dataclass(frozen=True)
class PluginSpec:
    """A chosen plugin: the name it was chosen by (alias or dotted path), its class's dotted path, its
    options, and where the choice came from (for error messages)."""

    kind: str
    name: str
    path: str
    options: Mapping[str, Any] = field(default_factory=dict)
    origin: str = "the default"


class Plugins(Generic[T]):
    """The plugins of one kind: subclasses of `base`, with the aliases of `settings.<setting>[<key>]`
    (or of `settings.<setting>` when `key` is None)."""

    def __init__(self, kind: str, base: type[T], setting: str, key: str | None = None) -> None:
        self.kind, self.base, self.setting, self.key = kind, base, setting, key

    def aliases(self) -> dict[str, Mapping[str, Any]]:
        table = getattr(settings, self.setting, {}) or {}
        if self.key is not None:
            table = table.get(self.key, {}) or {}
        return {
            alias: _entry(self.kind, entry, f"settings.{self.setting} [{alias!r}]")
            for alias, entry in table.items()
        }

    def spec(self, choice: object, origin: str) -> PluginSpec:
        """The plugin a choice names: an alias, a dotted path, or an entry whose CLASS is one of those."""
        if isinstance(choice, str):
            name, options = choice.strip(), {}
        else:
            entry = _entry(self.kind, choice, origin)
            name, options = entry["CLASS"], entry["OPTIONS"]
        if not name:
            raise ImproperlyConfigured(f"{origin}: the {self.kind} is empty; {self._choose()}")
        aliased = self.aliases().get(name)
        if aliased is None:
            return PluginSpec(self.kind, name, name, dict(options), origin)
        return PluginSpec(self.kind, name, aliased["CLASS"], {**aliased["OPTIONS"], **options}, origin)

    def load(self, spec: PluginSpec) -> type[T]:
        """The plugin's class, checked to be a subclass of the kind's base."""
        try:
            cls = import_string(spec.path)
        except ImportError as exc:
            raise ImproperlyConfigured(
                f"{self.kind} {spec.name!r} (from {spec.origin}): cannot import {spec.path!r} ({exc}). "
                f"{self._choose()}"
            ) from exc
        if not (isinstance(cls, type) and issubclass(cls, self.base)):
            raise ImproperlyConfigured(
                f"{self.kind} {spec.name!r} (from {spec.origin}): {spec.path} is not a "
                f"{self.base.__module__}.{self.base.__name__} subclass, so it cannot be the {self.kind}."
            )
        return cls

    def build(self, spec: PluginSpec, **extra: Any) -> T:
        """An instance of the plugin with its options (and `extra` over them)."""
        cls = self.load(spec)
        options = {**spec.options, **extra}
        try:
            return cls(**options)
        except ImproperlyConfigured:
            raise
        except Exception as exc:  # a plugin's constructor may raise anything; say which plugin and options
            raise ImproperlyConfigured(
                f"{self.kind} {spec.name!r} (from {spec.origin}): cannot be built with options "
                f"{_redacted(options)!r}: {exc}"
            ) from exc

    def _choose(self) -> str:
        return (
            f"Use one of {', '.join(sorted(self.aliases()))}, or a dotted path to a "
            f"{self.base.__name__} subclass."
        )


def _entry(kind: str, entry: object, origin: str) -> dict[str, Any]:
    if isinstance(entry, Mapping) and set(entry) <= ENTRY_KEYS:
        cls, options = entry.get("CLASS"), entry.get("OPTIONS", {})
        if isinstance(cls, str) and cls.strip() and isinstance(options, Mapping):
            return {"CLASS": cls.strip(), "OPTIONS": dict(options)}
    raise ImproperlyConfigured(
        f'{origin}: a {kind} is an alias, a dotted path, or {{"CLASS": "dotted.path", "OPTIONS": {{...}}}}; '
        f"got {entry!r}."
    )


def _redacted(options: Mapping[str, Any]) -> dict[str, Any]:
    return {
        k: "***" if any(s in k.lower() for s in ("key", "password", "secret")) and v else v
        for k, v in options.items()
    }


_singletons: list[Callable[[], None]] = []
_singletons_lock = threading.Lock()


def process_singleton(function: F) -> F:
    """Cache `function`'s results for the process (per arguments), forgotten by `reset_process_singletons`."""
    cached = lru_cache(maxsize=None)(function)
    with _singletons_lock:
        _singletons.append(cached.cache_clear)
    return cached  # type: ignore[return-value]


def on_reset(forget: Callable[[], None]) -> Callable[[], None]:
    """Register another process-wide cache to forget in `reset_process_singletons` (returns `forget`)."""
    with _singletons_lock:
        _singletons.append(forget)
    return forget


def reset_process_singletons() -> None:
    """Forget every process-wide plugin instance and cache (backends, layers, stages, connector kinds)."""
    with _singletons_lock:
        forgets = list(_singletons)
    for forget in forgets:
        forget()
