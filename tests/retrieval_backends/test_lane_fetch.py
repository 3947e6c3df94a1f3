"""Lane statements: timeout and planner settings in the same message, never leaking, one round trip."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from retrieval_backends.postgres import PostgresRetrievalBackend
from retrieval_backends.postgres.sql import lane_fetch


def setting(name: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting(%s)", [name])
        return str(cursor.fetchone()[0])


def check_lane_fetch() -> None:
    before = setting("statement_timeout"), setting("enable_seqscan")
    with CaptureQueriesContext(connection) as queries:
        results = lane_fetch(
            1500,
            [
                ("SELECT current_setting('statement_timeout'), %s::int", [7]),
                ("SELECT current_setting('enable_seqscan'), %s::text", ["x"]),
            ],
            enable_seqscan="off",
        )
    assert results == [[("1500ms", 7)], [("off", "x")]]
    assert len(queries) == 1
    assert (setting("statement_timeout"), setting("enable_seqscan")) == before
    with pytest.raises(Exception) as raised:
        lane_fetch(50, [("SELECT pg_sleep(%s)", [0.5])])
    assert PostgresRetrievalBackend().is_search_timeout(raised.value)
    assert setting("statement_timeout") == before[0]


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_settings_end_with_the_message() -> None:
    assert not connection.in_atomic_block
    check_lane_fetch()


@pytest.mark.django_db
def test_inside_a_transaction_settings_are_undone_and_a_timeout_leaves_it_usable() -> None:
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("CREATE TEMP TABLE lane_probe (x int)")
            cursor.execute("INSERT INTO lane_probe VALUES (1)")
        check_lane_fetch()
        with connection.cursor() as cursor:  # the enclosing transaction and its writes survived
            cursor.execute("SELECT x FROM lane_probe")
            assert cursor.fetchall() == [(1,)]
