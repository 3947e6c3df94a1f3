"""Lane statements prepared once per database connection and run by EXECUTE (no planning per search).

With client-side binding every statement is parsed and planned again; for the keyword lane that was
0.37 ms of its 2.7 ms in the server. A statement whose plan does not depend on its parameters (the
BM25 query's is fixed by design) is prepared on first use on a connection and executed with a
generic plan. Which names a connection holds is kept beside it; after any failure it is read again
from `pg_prepared_statements`, since a PREPARE outlives the transaction it ran in.
"""

from __future__ import annotations

import hashlib
import re
import threading
import weakref
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

PLACEHOLDER = re.compile(r"%%|%\((\w+)\)s|%s")
# Raw connection -> names prepared on it. Each thread has its own connections, but they share the map.
_known: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def statement_name(sql: str) -> str:
    return "knowledge_" + hashlib.sha1(sql.encode(), usedforsecurity=False).hexdigest()[:24]


def to_server_placeholders(sql: str) -> tuple[str, list[str | int]]:
    """`sql` with $1..$n for its %s / %(name)s placeholders, and what each stands for (a name, or
    the index of a positional parameter). A name used twice is one parameter."""
    order: list[str | int] = []

    def number(match: re.Match[str]) -> str:
        if match.group(0) == "%%":
            return "%%"
        key: str | int = match.group(1) if match.group(1) is not None else len(order)
        if key not in order or isinstance(key, int):
            order.append(key)
        return f"${order.index(key) + 1}"

    return PLACEHOLDER.sub(number, sql), order


def known_statements(cursor: Any, raw_connection: Any) -> set[str]:
    """The statement names prepared on this connection (read from the server when not known)."""
    with _lock:
        names = _known.get(raw_connection)
    if names is None:
        cursor.execute("SELECT name FROM pg_prepared_statements")
        names = {row[0] for row in cursor.fetchall()}
        with _lock:
            _known[raw_connection] = names
    return set(names)


def forget(raw_connection: Any) -> None:
    """After a failure the connection's statements are uncertain: read them again next time."""
    with _lock:
        _known.pop(raw_connection, None)


@lru_cache(maxsize=256)
def _server_form(sql: str) -> tuple[str, str, tuple[str | int, ...]]:
    """A statement's name, its text with $n placeholders and what each stands for; computed once
    per text (a lane's texts are few: one per shape of its scope filter)."""
    server_sql, order = to_server_placeholders(sql)
    return statement_name(sql), server_sql, tuple(order)


def execute_parts(sql: str, params: Sequence[Any] | Mapping[str, Any], names: set[str]) -> list[str]:
    """The PREPARE (when this connection lacks it) and the EXECUTE standing for `sql`; the EXECUTE
    takes the statement's own parameters, named or positional alike."""
    name, server_sql, order = _server_form(sql)
    named = isinstance(params, Mapping)
    arguments = ", ".join(f"%({key})s" if named else "%s" for key in order)
    parts = [] if name in names else [f"PREPARE {name} AS {server_sql}"]
    return [*parts, f"EXECUTE {name}({arguments})"]


def remember(raw_connection: Any, sqls: Sequence[str]) -> None:
    with _lock:
        _known.setdefault(raw_connection, set()).update(_server_form(sql)[0] for sql in sqls)
