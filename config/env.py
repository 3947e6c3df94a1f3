"""Environment-variable parsing that fails with a message naming the variable and the accepted values."""

from __future__ import annotations

from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

env = environ.Env()


def read_dotenv(base_dir: Path) -> None:
    """Load `.env` beside manage.py, then this checkout's service addresses (`.services/checkout.env`,
    written by scripts/checkout.sh), when present; real environment variables win, then `.env`."""
    for dotenv in (base_dir / ".env", base_dir / ".services" / "checkout.env"):
        if dotenv.exists():
            environ.Env.read_env(str(dotenv), overwrite=False)


def positive_int(name: str, default: int) -> int:
    """Read an integer variable that must be > 0."""
    raw = env.str(name, default=str(default))
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a positive integer, got {raw!r}.") from None
    if value <= 0:
        raise ImproperlyConfigured(f"{name} must be a positive integer, got {raw!r}.")
    return value


def non_negative_int(name: str, default: int) -> int:
    """Read an integer variable that must be >= 0."""
    raw = env.str(name, default=str(default))
    if not (raw.strip().isascii() and raw.strip().isdigit()):
        raise ImproperlyConfigured(f"{name} must be a whole number >= 0, got {raw!r}.")
    return int(raw)


def positive_float(name: str, default: float) -> float:
    """Read a float variable that must be > 0."""
    raw = env.str(name, default=str(default))
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a positive number, got {raw!r}.") from None
    if not value > 0:
        raise ImproperlyConfigured(f"{name} must be a positive number, got {raw!r}.")
    return value


def unit_float(name: str, default: float) -> float:
    """Read a float variable that must lie in [0, 1]."""
    raw = env.str(name, default=str(default))
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise ImproperlyConfigured(f"{name} must be a number between 0 and 1, got {raw!r}.")
    return value


def boolean(name: str, default: bool) -> bool:
    """Read a boolean variable; only the usual spellings are accepted."""
    raw = env.str(name, default="true" if default else "false").strip().lower()
    if raw in {"1", "true", "yes", "on"}:
        return True
    if raw in {"0", "false", "no", "off", ""}:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (true/false), got {raw!r}.")


def choice(name: str, allowed: tuple[str, ...], default: str) -> str:
    """Read a variable that must be one of `allowed` (case-insensitive)."""
    raw = env.str(name, default=default).strip().lower()
    if raw not in allowed:
        raise ImproperlyConfigured(f"{name} must be one of {', '.join(allowed)}, got {raw!r}.")
    return raw


def postgres_database(name: str, default: str) -> dict[str, object]:
    """Parse DATABASE_URL; anything but PostgreSQL is refused (pgvector and full-text need it)."""
    raw = env.str(name, default=default)
    try:
        config = environ.Env.db_url_config(raw)
    except Exception as exc:  # django-environ raises several types for malformed URLs
        raise ImproperlyConfigured(f"{name} is not a valid database URL: {exc}") from None
    if config.get("ENGINE") != "django.db.backends.postgresql":
        raise ImproperlyConfigured(
            f"{name} must be a PostgreSQL URL (postgres://user:pass@host:port/db); "
            f"got scheme {raw.split(':', 1)[0]!r}. "
            "This service needs PostgreSQL with pgvector and never falls back to another database."
        )
    return config


def redis_url(name: str, default: str) -> str:
    """Read a redis:// or rediss:// URL."""
    raw = env.str(name, default=default)
    if not raw.startswith(("redis://", "rediss://")):
        raise ImproperlyConfigured(f"{name} must start with redis:// or rediss://, got {raw!r}.")
    return raw


def http_url(name: str, default: str) -> str:
    """Read an http:// or https:// URL with a host."""
    from urllib.parse import urlsplit

    raw = env.str(name, default=default).strip()
    parts = urlsplit(raw)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise ImproperlyConfigured(
            f"{name} must be an http(s) URL such as https://search.internal:9200, got {raw!r}."
        )
    return raw.rstrip("/")


def readable_file(name: str) -> str | None:
    """Read an optional path that must name a readable file."""
    raw = env.str(name, default="").strip()
    if not raw:
        return None
    if not Path(raw).is_file():
        raise ImproperlyConfigured(f"{name} must name a readable file, got {raw!r}.")
    return raw


def index_prefix(name: str, default: str) -> str:
    """Read an index-name prefix: lowercase letters, digits and '-' (OpenSearch's index-name rules)."""
    import re

    raw = env.str(name, default=default).strip()
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,39}", raw):
        raise ImproperlyConfigured(
            f"{name} must be 1-40 lowercase letters, digits or '-', starting with a letter or digit; "
            f"got {raw!r}."
        )
    return raw
