"""What PostgreSQL's jsonb refuses in a JSON value (NUL, lone surrogates) and nesting too deep to handle."""

from __future__ import annotations

import re
from typing import Any

MAX_JSON_DEPTH = 32
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_JSON_BRACKET = re.compile(r"[\[\]{}]")


def has_lone_surrogate(text: str) -> bool:
    """Whether `text` holds a surrogate code point (valid JSON escapes, but not encodable as UTF-8)."""
    return any("\ud800" <= ch <= "\udfff" for ch in text)


def _text_problem(text: str) -> str | None:
    if "\x00" in text:
        return "Null characters are not allowed."
    if has_lone_surrogate(text):
        return "Surrogate characters are not allowed."
    return None


def json_problem(value: Any, max_depth: int = MAX_JSON_DEPTH) -> str | None:
    """Why `value` cannot be stored as jsonb, or None. Iterative, so any depth is safe to check."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            problem = _text_problem(item)
        elif isinstance(item, dict | list):
            if depth > max_depth:
                return f"Nested more than {max_depth} levels deep."
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
            problem = None
        else:
            problem = None
        if problem:
            return problem
    return None


def raw_json_depth(text: str) -> int:
    """How deeply the JSON text nests arrays and objects, found before parsing it (a parser recurses,
    so a hostile depth must be refused first). Brackets inside strings do not count."""
    depth = deepest = 0
    for match in _JSON_BRACKET.finditer(_JSON_STRING.sub("", text)):
        depth += 1 if match.group() in "[{" else -1
        deepest = max(deepest, depth)
    return deepest
