"""Shared fixtures: the real PostgreSQL (pytest-django test database) and pipeline resets."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import Client

from knowledge.pipeline.active import forget_active_embedder
from knowledge.plugins import reset_process_singletons
from knowledge.search.executor import close_search_connections
from tests.factories import UserFactory


@pytest.fixture(autouse=True)
def _fresh_registries() -> Iterator[None]:
    """Every process-wide plugin instance (backends, pipeline layers, connector kinds) built afresh."""
    reset_process_singletons()
    forget_active_embedder()
    yield
    reset_process_singletons()
    forget_active_embedder()


@pytest.fixture(scope="session", autouse=True)
def _close_lane_connections(django_db_setup: None) -> Iterator[None]:
    """Search lanes keep connections in pool threads; close them before the test database is dropped."""
    yield
    close_search_connections()


@pytest.fixture
def staff(client: Client) -> Client:
    """Django's test client, logged in as a staff superuser (the admin and the staff pages)."""
    client.force_login(UserFactory.create())
    return client
