"""Settings refuse bad environment values with a message naming the variable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _check(**env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SECRET_KEY": "x", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DATABASE_URL": "sqlite:///db.sqlite3"}, "DATABASE_URL must be a PostgreSQL URL"),
        ({"KNOWLEDGE_LANE_TIMEOUT_MS": "soon"}, "KNOWLEDGE_LANE_TIMEOUT_MS must be a positive integer"),
        ({"KNOWLEDGE_RRF_K": "0"}, "KNOWLEDGE_RRF_K must be a positive integer"),
        ({"DJANGO_DEBUG": "maybe"}, "DJANGO_DEBUG must be a boolean"),
        ({"REDIS_URL": "http://localhost"}, "REDIS_URL must start with redis://"),
        ({"KNOWLEDGE_RETRIEVAL_BACKEND": "elastic"}, "KNOWLEDGE_RETRIEVAL_BACKEND='elastic' is not a known"),
        ({"KNOWLEDGE_RETRIEVAL_BACKEND": "no.such.Backend"}, "cannot import 'no.such.Backend'"),
        ({"KNOWLEDGE_RATE_LIMIT_ON_REDIS_DOWN": "maybe"}, "must be one of open, closed, got 'maybe'"),
        ({"KNOWLEDGE_AUDIT_WRITES": "later"}, "must be one of background, inline"),
        ({"KNOWLEDGE_API_KEY_DAYS": "-1"}, "KNOWLEDGE_API_KEY_DAYS must be a whole number >= 0"),
    ],
)
def test_bad_values_fail_with_a_clear_message(env: dict[str, str], message: str) -> None:
    result = _check(**env)
    assert result.returncode != 0
    assert message in result.stderr + result.stdout


def test_missing_secret_key_is_reported() -> None:
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SECRET_KEY"}
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='config.settings';"
            "import environ; environ.Env.read_env=lambda *a, **k: None; django.setup()",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY" in result.stderr


def test_good_defaults_pass() -> None:
    result = _check()
    assert result.returncode == 0, result.stderr
