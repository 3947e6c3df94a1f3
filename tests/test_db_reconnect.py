"""Persistent connections after the server closed them (here: pg_terminate_backend from another session,
as a PostgreSQL restart does to every backend): the next request's health check reconnects."""

from __future__ import annotations

import select
import time

import psycopg
import pytest
from django.db import close_old_connections, connection

pytestmark = pytest.mark.django_db(transaction=True)  # no test transaction: the checks see idle connections


def terminate_this_backend() -> None:
    """Terminate this process's connection from another one, and wait for the server's goodbye."""
    pid = connection.connection.info.backend_pid
    params = connection.get_connection_params()
    with psycopg.connect(**params, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
    deadline = time.monotonic() + 5
    while not select.select([connection.connection.fileno()], [], [], 0.05)[0]:
        assert time.monotonic() < deadline, "the server did not close the connection"


def test_a_connection_the_server_closed_is_not_usable() -> None:
    connection.ensure_connection()
    terminate_this_backend()
    assert connection.is_usable() is False
    connection.close()


def test_the_next_request_reconnects_after_the_server_closed_the_connection() -> None:
    """CONN_HEALTH_CHECKS: without it, the request would run on the dead connection and fail."""
    # What a request's start does (request_started; Django's test client leaves it out).
    close_old_connections()
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    old_pid = connection.connection.info.backend_pid
    terminate_this_backend()
    close_old_connections()  # the next request
    with connection.cursor() as cursor:  # its first statement: the health check reconnects first
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] != old_pid
