"""Gunicorn settings for `make run`: threaded workers sized from the CPU count.

A search spends most of its time waiting on PostgreSQL, so each worker process serves several
requests on threads (`gthread`); processes, not threads, use the cores. Override with
GUNICORN_WORKERS / GUNICORN_THREADS / GUNICORN_TIMEOUT, or any gunicorn flag on the command line.
Each thread keeps its own database connection, plus the search-lane pool's: keep
workers x (threads + 4) below PostgreSQL's max_connections. The local embedder runs one intra-op
thread per query here (concurrent requests already use the cores; 61 vs 57 req/s at concurrency 16)
unless KNOWLEDGE_LOCAL_EMBEDDER_THREADS says otherwise.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
from typing import Any

# What "0 = automatic" means for the local embedder's threads in these workers (an explicit
# KNOWLEDGE_LOCAL_EMBEDDER_THREADS, in the environment or .env, still wins).
os.environ.setdefault("KNOWLEDGE_LOCAL_EMBEDDER_AUTO_THREADS", "1")

bind = f"{os.environ.get('RUN_HOST', '127.0.0.1')}:{os.environ.get('RUN_PORT', '8000')}"
worker_class = "gthread"
workers = int(os.environ.get("GUNICORN_WORKERS", max(2, multiprocessing.cpu_count())))
threads = int(os.environ.get("GUNICORN_THREADS", 4))
timeout = int(os.environ.get("GUNICORN_TIMEOUT", 60))
keepalive = 5
accesslog = os.environ.get("GUNICORN_ACCESS_LOG") or None
errorlog = "-"
wsgi_app = "config.wsgi:application"


def post_worker_init(worker: Any) -> threading.Thread:
    """Load the search embedder in the background as each worker starts: otherwise the worker's first
    search loads it (2.4 s with the local model), and the worker answers meanwhile."""
    thread = threading.Thread(target=warm_up, name="embedder-warm-up", daemon=True)
    thread.start()
    return thread


def warm_up() -> None:
    from django.db import connections

    from knowledge.pipeline.active import active_embedder

    try:
        active_embedder().prepare()
    except Exception:  # the first search will load it, and report what fails
        logging.getLogger("gunicorn.error").warning("embedder warm-up failed", exc_info=True)
    finally:
        connections.close_all()  # this thread's own connections, if the choice of embedder read the database
