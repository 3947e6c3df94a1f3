"""The app's PL/pgSQL functions and triggers, one file per version, that its migrations load by name."""

from __future__ import annotations

import re
from importlib import resources

# `<name>.v<version>.sql`: name after what the file defines (its function, without `knowledge_`).
FILE_NAME = re.compile(r"(?P<name>[a-z0-9_]+)\.v(?P<version>[1-9][0-9]*)\.sql")


def sql(name: str, version: int) -> str:
    """The text of `knowledge/sql/<name>.v<version>.sql`, as a migration runs it.

    A released version is never edited again (a database migrated from it would differ from a new one):
    a change is a new version file and a new migration that loads it. The highest version of a name is
    the current text of what it defines; tests/knowledge/test_sql_files.py checks it against the
    database. A file defines one function and, usually, the triggers that run it.

    :raises LookupError: there is no such file.
    """
    file_name = f"{name}.v{version}.sql"
    if not FILE_NAME.fullmatch(file_name):
        raise LookupError(f"{file_name!r} is not a knowledge/sql file name (<name>.v<version>.sql)")
    path = resources.files(__name__).joinpath(file_name)
    if not path.is_file():
        known = sorted(v for n, v in _versions() if n == name)
        raise LookupError(
            f"knowledge/sql/{file_name} does not exist (versions of {name!r}: {known or 'none'})"
        )
    return path.read_text(encoding="utf-8")


def latest() -> dict[str, int]:
    """Every name's highest version: the file that holds the current text of what it defines."""
    highest: dict[str, int] = {}
    for name, version in _versions():
        highest[name] = max(version, highest.get(name, 0))
    return highest


def _versions() -> list[tuple[str, int]]:
    found = (FILE_NAME.fullmatch(entry.name) for entry in resources.files(__name__).iterdir())
    return [(match["name"], int(match["version"])) for match in found if match]
