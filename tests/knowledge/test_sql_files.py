"""Each function's current text lives in one file: the highest version of its name in knowledge/sql/."""

from __future__ import annotations

import re

import pytest
from django.db import connection

from knowledge.sql import latest, sql

pytestmark = pytest.mark.django_db

# pg_proc.prosrc keeps a function's body as written: the text between its dollar quotes.
FUNCTION = re.compile(r"CREATE OR REPLACE FUNCTION (\w+)\(.*?\$\$(.*?)\$\$", re.DOTALL)
TRIGGER = re.compile(r"CREATE (?:CONSTRAINT )?TRIGGER (\w+)")


def current_functions() -> dict[str, str]:
    """Function name -> body, as the highest version of every file name defines it."""
    bodies: dict[str, str] = {}
    for name, version in latest().items():
        for function, body in FUNCTION.findall(sql(name, version)):
            assert function not in bodies, f"{function} is defined by two current files"
            bodies[function] = body
    return bodies


def installed_functions() -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT p.proname, p.prosrc FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
            "WHERE n.nspname = current_schema() AND p.proname LIKE %s",
            ["knowledge%"],
        )
        rows = cursor.fetchall()
    bodies = dict(rows)
    assert len(bodies) == len(rows), "an overloaded knowledge function: names no longer identify one"
    return bodies


def test_the_database_runs_the_highest_version_of_each_function() -> None:
    installed = installed_functions()
    current = current_functions()
    assert current, "knowledge/sql defines no function"
    for function, body in current.items():
        assert installed.get(function) == body, f"{function} differs from its file in knowledge/sql"


def test_every_knowledge_function_comes_from_a_file() -> None:
    assert sorted(installed_functions().keys() - current_functions().keys()) == []


def test_every_knowledge_trigger_comes_from_a_file() -> None:
    defined = {t for name, version in latest().items() for t in TRIGGER.findall(sql(name, version))}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal AND tgrelid::regclass::text LIKE %s",
            ["knowledge%"],
        )
        installed = {row[0] for row in cursor.fetchall()}
    assert installed, "no knowledge trigger installed"
    assert sorted(installed - defined) == []


def test_a_missing_version_fails_clearly() -> None:
    with pytest.raises(LookupError, match=r"document_tombstone\.v99\.sql does not exist .*\[1, 2\]"):
        sql("document_tombstone", 99)
    with pytest.raises(LookupError, match="not a knowledge/sql file name"):
        sql("../settings", 1)
