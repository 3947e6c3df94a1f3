"""A checkout owns its services: ports, the pg0 instance, state and PID files come from its own path, so
two clones on one machine never share a database, and `make stop` in one never stops the other's."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parents[1]
PG_HOME = Path("/var/lib/kbpg")


def clone(folder: Path) -> Path:
    """A checkout at `folder` with this one's scripts (and its .venv, so no second install)."""
    folder.mkdir(parents=True)
    shutil.copytree(ROOT / "scripts", folder / "scripts", ignore=shutil.ignore_patterns("target"))
    (folder / ".venv").symlink_to(ROOT / ".venv")
    return folder


def derived(checkout: Path) -> dict[str, str]:
    names = ["PG_PORT", "PG_INSTANCE", "REDIS_PORT", "OPENSEARCH_PORT", "SERVICES_DIR"]
    script = "source scripts/checkout.sh; " + "; ".join(f'echo "{n}=${{{n}}}"' for n in names)
    env = {k: v for k, v in os.environ.items() if k not in names}
    out = subprocess.run(
        ["bash", "-c", script], cwd=checkout, env=env, capture_output=True, text=True, check=True
    )
    return dict(line.split("=", 1) for line in out.stdout.splitlines())


def services(checkout: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("PG_", "REDIS_", "OPENSEARCH_", "SERVICES_"))
    }
    env.pop("DATABASE_URL", None)
    return subprocess.run(
        ["bash", "scripts/services.sh", *args],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_two_checkouts_get_their_own_ports_instance_and_state(tmp_path: Path) -> None:
    first, second = clone(tmp_path / "one" / "repo"), clone(tmp_path / "two" / "repo")
    a, b = derived(first), derived(second)
    for name in ("PG_PORT", "PG_INSTANCE", "REDIS_PORT", "OPENSEARCH_PORT", "SERVICES_DIR"):
        assert a[name] != b[name], name
    assert a["SERVICES_DIR"] == str(first / ".services")
    assert 21000 <= int(a["PG_PORT"]) < 32768  # below Linux's ephemeral ports
    written = (first / ".services" / "checkout.env").read_text()
    assert f"DATABASE_URL=postgres://postgres:postgres@127.0.0.1:{a['PG_PORT']}/knowledge" in written
    assert f"REDIS_URL=redis://127.0.0.1:{a['REDIS_PORT']}/0" in written
    assert derived(first) == a  # the same path always gets the same services


def test_dotenv_chooses_ports_of_its_own(tmp_path: Path) -> None:
    checkout = clone(tmp_path / "repo")
    (checkout / ".env").write_text("PG_PORT=29999\nREDIS_PORT=29998\n")
    found = derived(checkout)
    assert (found["PG_PORT"], found["REDIS_PORT"]) == ("29999", "29998")


def test_this_checkouts_django_uses_its_own_services() -> None:
    mine = derived(ROOT)
    assert str(settings.DATABASES["default"]["PORT"]) == mine["PG_PORT"] or os.environ.get("DATABASE_URL")
    assert settings.REDIS_URL.endswith(f":{mine['REDIS_PORT']}/0") or os.environ.get("REDIS_URL")


@pytest.fixture
def other_checkout(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0 or not (PG_HOME / "pg0").exists():
        pytest.skip("starting a second pg0 instance needs root and scripts/services.sh's kbpg user")
    checkout = clone(tmp_path / "other" / "repo")
    yield checkout
    services(checkout, "down", "redis")
    instance = derived(checkout)["PG_INSTANCE"]
    drop = ["runuser", "-u", "kbpg", "--", str(PG_HOME / "pg0"), "drop", "--name", instance, "--force"]
    subprocess.run(drop, cwd=PG_HOME, capture_output=True, timeout=60)


@pytest.mark.django_db
def test_the_other_checkouts_up_and_down_never_touch_this_ones_services(other_checkout: Path) -> None:
    ours = redis.Redis.from_url(settings.REDIS_URL)
    assert ours.ping()
    started = services(other_checkout, "up", "core")
    assert started.returncode == 0, started.stdout + started.stderr
    theirs = derived(other_checkout)
    assert redis.Redis(port=int(theirs["REDIS_PORT"])).ping()
    assert f"127.0.0.1:{theirs['PG_PORT']}" in started.stdout
    stopped = services(other_checkout, "down", "core")
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert "redis stopped" in stopped.stdout and "postgres stopped" in stopped.stdout
    assert ours.ping()  # this checkout's Redis and PostgreSQL still answer
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)
    with pytest.raises(redis.ConnectionError):
        redis.Redis(port=int(theirs["REDIS_PORT"]), socket_connect_timeout=1).ping()
