"""Shared benchmark plumbing: a dedicated database (never the dev one) and percentile summaries."""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
DEV_URL = "postgres://postgres:postgres@127.0.0.1:5433/knowledge"


def checkout_environment() -> None:
    """The environment, then .env, then this checkout's services (.services/checkout.env), as Django
    reads them: DATABASE_URL, REDIS_URL and OPENSEARCH_URL of this checkout."""
    sys.path.insert(0, str(ROOT))
    from config.env import read_dotenv

    read_dotenv(ROOT)


checkout_environment()  # every benchmark's defaults (argument parsers included) see this checkout's URLs


def bench_url(database: str) -> str:
    """The server of DATABASE_URL (or this checkout's) with the benchmark database; never the dev one."""
    base = urlsplit(os.environ.get("DATABASE_URL", DEV_URL))
    if base.path.lstrip("/") == database:
        sys.exit(f"refusing to benchmark in {database!r}: it is the DATABASE_URL database")
    return urlunsplit(base._replace(path=f"/{database}"))


def setup_django(database: str) -> None:
    """Create the benchmark database if missing, point Django at it and migrate."""
    import psycopg

    url = bench_url(database)
    with psycopg.connect(urlunsplit(urlsplit(url)._replace(path="/postgres")), autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [database]).fetchone() is None:
            conn.execute(f'CREATE DATABASE "{database}"')
    os.environ["DATABASE_URL"] = url
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    sys.path.insert(0, str(ROOT))
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def percentile(samples: Sequence[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(fraction * len(ordered)) - 1))]


def summary(samples: Sequence[float]) -> dict[str, float]:
    return {"p50_ms": round(percentile(samples, 0.5), 2), "p95_ms": round(percentile(samples, 0.95), 2)}
