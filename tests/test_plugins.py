"""The one plugin loader: aliases with CLASS/OPTIONS, dotted paths, overlays, errors, and the one reset."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from knowledge.connectors.registry import connector_kind
from knowledge.pipeline.fusers.base import Fuser
from knowledge.pipeline.fusers.rrf import RRFFuser
from knowledge.plugins import Plugins, reset_process_singletons
from retrieval_backends.opensearch import OpenSearchRetrievalBackend
from retrieval_backends.postgres import PostgresRetrievalBackend
from retrieval_backends.registry import backend, get_backend

TABLE = {"fuse": {"rrf": {"CLASS": "knowledge.pipeline.fusers.rrf.RRFFuser", "OPTIONS": {"k": 7}}}}


def fusers() -> Plugins[Fuser]:
    return Plugins("fuser", Fuser, "TEST_PLUGINS", "fuse")


@override_settings(TEST_PLUGINS=TABLE)
def test_an_alias_brings_its_options_and_an_entry_lays_its_own_over_them() -> None:
    plugins = fusers()
    assert plugins.build(plugins.spec("rrf", "test")).k == 7  # type: ignore[attr-defined]
    spec = plugins.spec({"CLASS": "rrf", "OPTIONS": {"k": 9}}, "test")
    assert (spec.path, dict(spec.options)) == ("knowledge.pipeline.fusers.rrf.RRFFuser", {"k": 9})
    dotted = plugins.spec("knowledge.pipeline.fusers.rrf.RRFFuser", "test")
    assert isinstance(plugins.build(dotted), RRFFuser) and dotted.options == {}


@override_settings(TEST_PLUGINS=TABLE)
@pytest.mark.parametrize(
    ("choice", "message"),
    [
        ("", "the fuser is empty"),
        ({"BACKEND": "rrf"}, 'a fuser is an alias, a dotted path, or {"CLASS"'),
        ({"CLASS": "rrf", "OPTIONS": []}, 'a fuser is an alias, a dotted path, or {"CLASS"'),
        ("no.such.Fuser", "cannot import 'no.such.Fuser'"),
        ("knowledge.pipeline.rerankers.mmr.MMRReranker", "is not a knowledge.pipeline.fusers.base.Fuser"),
        (
            {"CLASS": "rrf", "OPTIONS": {"k": 0}},
            "cannot be built with options {'k': 0}: RRF k must be positive",
        ),
    ],
)
def test_a_bad_choice_says_which_plugin_and_why(choice: Any, message: str) -> None:
    plugins = fusers()
    with pytest.raises(ImproperlyConfigured) as caught:
        plugins.build(plugins.spec(choice, "the test"))
    assert message in str(caught.value)


def test_secrets_in_options_are_not_repeated_in_errors() -> None:
    plugins: Plugins[Fuser] = Plugins("fuser", Fuser, "UNSET_PLUGINS")
    with pytest.raises(ImproperlyConfigured) as caught:
        plugins.build(plugins.spec({"CLASS": "knowledge.pipeline.fusers.rrf.RRFFuser"}, "t"), api_key="sk-1")
    assert "sk-1" not in str(caught.value) and "'api_key': '***'" in str(caught.value)


@pytest.mark.django_db
def test_two_backends_live_at_once_by_alias_while_one_serves(settings: Any) -> None:
    settings.RETRIEVAL_BACKEND = "postgres"
    serving, other = get_backend(), backend("opensearch")
    assert isinstance(serving, PostgresRetrievalBackend) and isinstance(other, OpenSearchRetrievalBackend)
    assert backend("opensearch") is other and backend() is serving  # one instance per alias


def test_one_reset_forgets_every_process_singleton(settings: Any) -> None:
    first_backend, first_kind = get_backend(), connector_kind("filesystem")
    reset_process_singletons()
    assert get_backend() is not first_backend and connector_kind("filesystem") is not first_kind


def test_the_environment_reaches_plugins_only_as_their_options() -> None:
    code = (
        "import django; django.setup(); from django.conf import settings as s; "
        "p = s.KNOWLEDGE_PLUGINS; "
        "print(p['embedder']['openai']['OPTIONS']['model'], p['fuser']['rrf']['OPTIONS']['k'], "
        "p['chunker']['fixed-size']['OPTIONS']['max_tokens'])"
    )
    env = {
        **os.environ,
        "KNOWLEDGE_OPENAI_MODEL": "m-9",
        "KNOWLEDGE_RRF_K": "11",
        "KNOWLEDGE_CHUNK_TOKENS": "99",
    }
    env["DJANGO_SETTINGS_MODULE"] = "config.settings"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["m-9", "11", "99"]
