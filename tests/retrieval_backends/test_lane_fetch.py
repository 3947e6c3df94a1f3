"""Lane statements: timeout and planner settings in the same message, never leaking, one round trip."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from knowledge.store import prepared
from knowledge.store.sql import lane_fetch, prepared_lane_fetch
from retrieval_backends.postgres.backend import _canceled


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
    assert _canceled(raised.value)
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


# --- prepared lane statements ------------------------------------------------------------------------------
NAMED = "SELECT %(word)s::text || %(n)s::int, %(n)s::int * 2, '100%%'"
POSITIONAL = "SELECT %s::int + %s::int"


def test_placeholders_become_numbered_parameters() -> None:
    assert prepared.to_server_placeholders(NAMED) == (
        "SELECT $1::text || $2::int, $2::int * 2, '100%%'",
        ["word", "n"],
    )
    assert prepared.to_server_placeholders(POSITIONAL) == ("SELECT $1::int + $2::int", [0, 1])


def run_prepared() -> tuple[list[list[tuple[object, ...]]], list[str]]:
    with CaptureQueriesContext(connection) as queries:
        rows = prepared_lane_fetch(
            1000, [(NAMED, {"word": "x", "n": 4}), ("SELECT %(other)s::text, 2", {"other": "y"})]
        )
        rows += prepared_lane_fetch(1000, [(POSITIONAL, [2, 3])])
    return rows, [q["sql"] for q in queries]


def check_prepared() -> None:
    expected = [[("x4", 8, "100%")], [("y", 2)], [(5,)]]
    first, sent = run_prepared()
    assert first == expected and len(sent) <= 3  # (a look-up of the connection's statements, once)
    assert [s.count("PREPARE") for s in sent[-2:]] == [2, 1]
    again, sent = run_prepared()
    assert again == expected and len(sent) == 2 and "PREPARE" not in " ".join(sent)  # planned once
    with connection.cursor() as cursor:
        cursor.execute("DEALLOCATE ALL")  # what a pooler's DISCARD ALL does behind our back
    assert run_prepared()[0] == expected
    with pytest.raises(Exception) as raised:  # a failure leaves the statements uncertain ...
        prepared_lane_fetch(50, [("SELECT pg_sleep(%s)", [0.5])])
    assert _canceled(raised.value)
    assert run_prepared()[0] == expected  # ... so they are read again from the server


@pytest.mark.django_db(transaction=True)
def test_prepared_statements_outside_a_transaction() -> None:
    check_prepared()


@pytest.mark.django_db
def test_prepared_statements_inside_a_transaction() -> None:
    with transaction.atomic():
        check_prepared()
