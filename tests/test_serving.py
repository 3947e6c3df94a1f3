"""`make run` serves with gunicorn: its config, and a real gunicorn answering on the test database."""

from __future__ import annotations

import http.client
import os
import runpy
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "config" / "gunicorn.conf.py"
CHUNKED_BODY = b'{"id": "chunked", "content": "sent in chunks"}'


def test_threaded_workers_sized_from_the_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    monkeypatch.setenv("RUN_PORT", "8123")
    config = runpy.run_path(str(CONFIG))
    assert config["worker_class"] == "gthread"
    assert config["workers"] >= 2 and config["threads"] >= 2
    assert config["bind"] == "127.0.0.1:8123"
    monkeypatch.setenv("GUNICORN_WORKERS", "5")
    assert runpy.run_path(str(CONFIG))["workers"] == 5


def test_workers_embed_queries_on_one_thread_unless_told(monkeypatch: pytest.MonkeyPatch, settings) -> None:  # type: ignore[no-untyped-def]
    from knowledge.pipeline.embedders.local import default_threads

    monkeypatch.setenv("KNOWLEDGE_LOCAL_EMBEDDER_AUTO_THREADS", "")  # restored (or removed) afterwards
    monkeypatch.delenv("KNOWLEDGE_LOCAL_EMBEDDER_AUTO_THREADS")
    settings.KNOWLEDGE_LOCAL_EMBEDDER_THREADS = 0
    cpus = default_threads()
    runpy.run_path(str(CONFIG))
    assert default_threads() == 1
    settings.KNOWLEDGE_LOCAL_EMBEDDER_THREADS = 3  # set in .env or the environment: it wins
    assert default_threads() == 3
    monkeypatch.delenv("KNOWLEDGE_LOCAL_EMBEDDER_AUTO_THREADS")
    settings.KNOWLEDGE_LOCAL_EMBEDDER_THREADS = 0
    assert default_threads() == cpus


@pytest.mark.django_db(transaction=True)
def test_each_worker_loads_the_embedder_as_it_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    from knowledge.pipeline import active

    prepared: list[str] = []

    class Embedder:
        def prepare(self) -> None:
            prepared.append(threading.current_thread().name)

    monkeypatch.setattr(active, "active_embedder", Embedder)
    runpy.run_path(str(CONFIG))["post_worker_init"](None).join(timeout=30)
    assert prepared == ["embedder-warm-up"]


def test_run_script_uses_gunicorn_and_keeps_runserver_for_development() -> None:
    script = (ROOT / "scripts" / "run.sh").read_text()
    assert "exec .venv/bin/gunicorn --config config/gunicorn.conf.py" in script
    assert 'if [ "${RUN_DEV_SERVER:-0}" = 1 ]' in script


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def get(port: int, path: str) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", path)
    response = conn.getresponse()
    return response.status, response.read()


@pytest.mark.django_db(transaction=True)
def test_gunicorn_serves_the_api(tmp_path: Any) -> None:
    settings = connection.settings_dict
    url = (
        f"postgres://{settings['USER']}:{settings['PASSWORD']}@{settings['HOST']}:{settings['PORT']}"
        f"/{settings['NAME']}"
    )
    port = free_port()
    env = {**os.environ, "DATABASE_URL": url, "RUN_PORT": str(port), "GUNICORN_WORKERS": "2"}
    env["DJANGO_SETTINGS_MODULE"] = "config.settings_test"
    gunicorn = Path(sys.executable).parent / "gunicorn"
    log = (tmp_path / "gunicorn.log").open("wb")
    process = subprocess.Popen(
        [str(gunicorn), "--config", str(CONFIG)], cwd=ROOT, env=env, stdout=log, stderr=log
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                status, body = get(port, "/api/v1/health")
                break
            except OSError:
                assert process.poll() is None, (tmp_path / "gunicorn.log").read_text()
                assert time.monotonic() < deadline, "gunicorn did not answer in 30 s"
                time.sleep(0.2)
        assert status == 200, body
        assert get(port, "/api/v1/search")[0] == 401  # the API itself, not only the health check
        # A chunked upload (no Content-Length): Django would read it as empty; it is told so instead.
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.putrequest("POST", "/api/v1/index")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Transfer-Encoding", "chunked")
        conn.endheaders()
        conn.send(b"%x\r\n%s\r\n0\r\n\r\n" % (len(CHUNKED_BODY), CHUNKED_BODY))
        response = conn.getresponse()
        assert response.status == 411, response.read()
        assert b"Content-Length" in response.read()
        conn.close()
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def test_favicon_ico_points_at_the_icon_the_pages_link(client: Any) -> None:
    response = client.get("/favicon.ico")
    assert response.status_code == 302
    assert response["Location"].startswith("/static/knowledge/favicon") and response["Location"].endswith(
        ".svg"
    )
