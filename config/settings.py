"""Django settings, read from the environment (django-environ); every variable is listed in .env.example."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from config import env as cfg
from config.plugins import plugin_table

BASE_DIR = Path(__file__).resolve().parent.parent
cfg.read_dotenv(BASE_DIR)
env = cfg.env

# --- Core -------------------------------------------------------------------------------------------
DEBUG = cfg.boolean("DJANGO_DEBUG", False)
SECRET_KEY = env.str("DJANGO_SECRET_KEY")
# Keys (Fernet, comma-separated; the first encrypts, all decrypt) of connector credentials at rest.
# Unset: one derived from DJANGO_SECRET_KEY (rotating that key then needs the old one listed here).
KNOWLEDGE_CREDENTIAL_KEYS = [k for k in env.list("KNOWLEDGE_CREDENTIAL_KEYS", default=[]) if k]
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    # Before staticfiles: `runserver` leaves static files to WhiteNoise, as every other server does.
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "knowledge",
    "retrieval_backends",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Static files in every mode (DEBUG or not, runserver or gunicorn), from STATIC_ROOT after collectstatic.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "knowledge.api.middleware.RequireContentLength",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database (PostgreSQL + pgvector only) -----------------------------------------------------------
DATABASES = {
    "default": cfg.postgres_database("DATABASE_URL", "postgres://postgres:postgres@127.0.0.1:5433/knowledge"),
}
DATABASES["default"]["CONN_MAX_AGE"] = cfg.positive_int("DATABASE_CONN_MAX_AGE", 60)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# A streaming read replica of that database: the PostgreSQL backend sends a tenant's lanes to it once
# it has replayed the tenant's last access change (README, "Read replicas"). Empty: none.
if env.str("KNOWLEDGE_READ_REPLICA_URL", default=""):
    DATABASES["replica"] = cfg.postgres_database("KNOWLEDGE_READ_REPLICA_URL", "")
    DATABASES["replica"]["CONN_MAX_AGE"] = DATABASES["default"]["CONN_MAX_AGE"]
    DATABASES["replica"]["CONN_HEALTH_CHECKS"] = True
    DATABASES["replica"]["TEST"] = {"MIRROR": "default"}  # the suite never creates a test copy of it
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis and Celery --------------------------------------------------------------------------------
REDIS_URL = cfg.redis_url("REDIS_URL", "redis://127.0.0.1:6379/0")
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = cfg.positive_int("CELERY_TASK_TIME_LIMIT", 900)
CELERY_TASK_SOFT_TIME_LIMIT = cfg.positive_int("CELERY_TASK_SOFT_TIME_LIMIT", 840)
CELERY_TASK_ALWAYS_EAGER = cfg.boolean("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_RESULT_EXPIRES = 3600
# Nothing reads a task's return value (progress lives in PostgreSQL); only `ping` keeps its result.
# Sending a task that keeps one first subscribes to the result store, whose reconnect policy held every
# send for 19 s while Redis was down.
CELERY_TASK_IGNORE_RESULT = True
# A broker outage must never fail (or stall) the write that enqueues a speed-up task: one quick attempt.
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_BROKER_TRANSPORT_OPTIONS = {"socket_connect_timeout": 2}
# Two queues: "priority" (the default: index pushes, ACL changes, deletions, the reconciler, beat's
# small tasks) and "bulk" (connector syncs, ingest jobs). Run a worker for each, so bulk work never
# holds a slot the priority queue needs (README, "Workers and queues").
CELERY_TASK_DEFAULT_QUEUE = "priority"
CELERY_TASK_ROUTES = {
    "knowledge.tasks.sync_connector": {"queue": "bulk"},
    "knowledge.tasks.run_ingest_job": {"queue": "bulk"},
    # Network-bound (a source's rate limits can make it wait): never on the priority queue.
    "knowledge.tasks.sync_connector_permissions": {"queue": "bulk"},
    # Builds a tenant's HNSW graph (minutes for a big tenant): never on the priority queue.
    "knowledge.tasks.maintain_vector_indexes": {"queue": "bulk"},
}
# How often the per-tenant vector indexes are checked (a tenant past the threshold gets its graph).
KNOWLEDGE_VECTOR_INDEX_SECONDS = cfg.positive_float("KNOWLEDGE_VECTOR_INDEX_SECONDS", 120.0)
KNOWLEDGE_RECONCILE_SECONDS = cfg.positive_float("KNOWLEDGE_RECONCILE_SECONDS", 5.0)
# One reconciler run pushes for at most this long, so it never holds the priority worker for long.
KNOWLEDGE_RECONCILE_BUDGET_SECONDS = cfg.positive_float("KNOWLEDGE_RECONCILE_BUDGET_SECONDS", 2.0)
CELERY_BEAT_SCHEDULE = {
    "resume-ingest-jobs": {"task": "knowledge.tasks.resume_ingest_jobs", "schedule": 30.0},
    "purge-ingest-jobs": {"task": "knowledge.tasks.purge_ingest_jobs", "schedule": 3600.0},
    "sync-due-connectors": {"task": "knowledge.tasks.sync_due_connectors", "schedule": 60.0},
    "sync-due-permissions": {"task": "knowledge.tasks.sync_due_permissions", "schedule": 60.0},
    "purge-audit-log": {"task": "knowledge.tasks.purge_audit_log", "schedule": 3600.0},
    "maintain-vector-indexes": {
        "task": "knowledge.tasks.maintain_vector_indexes",
        "schedule": KNOWLEDGE_VECTOR_INDEX_SECONDS,
        "options": {"expires": KNOWLEDGE_VECTOR_INDEX_SECONDS},
    },
    # Pushes whatever the on-commit tasks missed (the change log is in PostgreSQL).
    "reconcile-index": {
        "task": "knowledge.tasks.reconcile_index",
        "schedule": KNOWLEDGE_RECONCILE_SECONDS,
        "options": {"expires": KNOWLEDGE_RECONCILE_SECONDS * 2},
    },
}

# --- API keys and rate limits ------------------------------------------------------------------------
# A new key's lifetime in days (0: new keys never expire); an admin may change a key's expiry.
KNOWLEDGE_API_KEY_DAYS = cfg.non_negative_int("KNOWLEDGE_API_KEY_DAYS", 365)
# Requests per minute per key and per tenant when the key or tenant sets none (0: unlimited).
KNOWLEDGE_API_KEY_RATE_LIMIT = cfg.non_negative_int("KNOWLEDGE_API_KEY_RATE_LIMIT", 3000)
KNOWLEDGE_TENANT_RATE_LIMIT = cfg.non_negative_int("KNOWLEDGE_TENANT_RATE_LIMIT", 0)
# With Redis (which counts the requests) unreachable: "open" serves unthrottled, "closed" answers 503.
KNOWLEDGE_RATE_LIMIT_ON_REDIS_DOWN = cfg.choice(
    "KNOWLEDGE_RATE_LIMIT_ON_REDIS_DOWN", ("open", "closed"), "open"
)
KNOWLEDGE_RATE_LIMIT_PREFIX = env.str("KNOWLEDGE_RATE_LIMIT_PREFIX", default="kb:rate")

# --- Audit log -----------------------------------------------------------------------------------------
KNOWLEDGE_AUDIT = cfg.boolean("KNOWLEDGE_AUDIT", True)
# Keep each search's raw question (off: only its SHA-256).
KNOWLEDGE_AUDIT_QUERY_TEXT = cfg.boolean("KNOWLEDGE_AUDIT_QUERY_TEXT", False)
KNOWLEDGE_AUDIT_RETENTION_DAYS = cfg.non_negative_int("KNOWLEDGE_AUDIT_RETENTION_DAYS", 90)
# "background": batched by a thread per process (knowledge/services/audit.py); "inline": in the request.
KNOWLEDGE_AUDIT_WRITES = cfg.choice("KNOWLEDGE_AUDIT_WRITES", ("background", "inline"), "background")
# Who sees keyword-lane scores (BM25 over statistics that count chunks the caller cannot see): only
# callers with bypass_acl (default), or everyone. See "Keyword statistics" in the README.
KNOWLEDGE_KEYWORD_SCORES = cfg.choice("KNOWLEDGE_KEYWORD_SCORES", ("bypass", "everyone"), "bypass")

# --- Retrieval ---------------------------------------------------------------------------------------
# The serving backend: an alias of RETRIEVAL_BACKENDS or a dotted path to a KnowledgeRetrievalBackend.
RETRIEVAL_BACKEND = env.str("KNOWLEDGE_RETRIEVAL_BACKEND", default="postgres").strip()
# How vectors are stored: "vector" (4 bytes a dimension) or "halfvec" (2; PostgreSQL's halfvec, the
# OpenSearch backend's byte encoding). Switch a deployment with `manage.py reindex` (README).
KNOWLEDGE_VECTOR_STORAGE = cfg.choice("KNOWLEDGE_VECTOR_STORAGE", ("vector", "halfvec"), "vector")
KNOWLEDGE_LANE_TIMEOUT_MS = cfg.positive_int("KNOWLEDGE_LANE_TIMEOUT_MS", 2000)
# A whole search's time budget (its lanes, planned queries and stages; LLM stages included).
KNOWLEDGE_SEARCH_DEADLINE_MS = cfg.positive_int("KNOWLEDGE_SEARCH_DEADLINE_MS", 20000)
# Each backend gets only its own options (like Django's STORAGES aliases).
RETRIEVAL_BACKENDS: dict[str, dict[str, Any]] = {
    "postgres": {
        "CLASS": "retrieval_backends.postgres.PostgresRetrievalBackend",
        "OPTIONS": {
            "lane_timeout_ms": KNOWLEDGE_LANE_TIMEOUT_MS,
            "exact_scan_max_rows": cfg.positive_int("KNOWLEDGE_EXACT_SCAN_MAX_ROWS", 5000),
            "tenant_index_min_vectors": cfg.positive_int("KNOWLEDGE_TENANT_INDEX_MIN_VECTORS", 5000),
            "read_replica": "replica" if "replica" in DATABASES else None,
            "bm25_k1": cfg.positive_float("KNOWLEDGE_BM25_K1", 1.2),
            "bm25_b": cfg.unit_float("KNOWLEDGE_BM25_B", 0.75),
            "keyword_candidate_budget": cfg.positive_int("KNOWLEDGE_KEYWORD_CANDIDATE_BUDGET", 500),
        },
    },
    "opensearch": {
        "CLASS": "retrieval_backends.opensearch.OpenSearchRetrievalBackend",
        "OPTIONS": {
            "url": cfg.http_url("OPENSEARCH_URL", "http://127.0.0.1:9200"),
            "username": env.str("OPENSEARCH_USERNAME", default=""),
            "password": env.str("OPENSEARCH_PASSWORD", default=""),
            "ca_certs": cfg.readable_file("OPENSEARCH_CA_CERTS"),
            "verify_certs": cfg.boolean("OPENSEARCH_VERIFY_CERTS", True),
            "index_prefix": cfg.index_prefix("OPENSEARCH_INDEX_PREFIX", "knowledge"),
            "timeout_ms": cfg.positive_int("OPENSEARCH_TIMEOUT_MS", 10000),
            "http_compress": cfg.boolean("OPENSEARCH_HTTP_COMPRESS", False),
            "lane_timeout_ms": KNOWLEDGE_LANE_TIMEOUT_MS,
        },
    },
}
# Pipeline plugins: unset means plugins.json, then the built-in default (see knowledge/pipeline/registry.py).
KNOWLEDGE_EMBEDDER = env.str("KNOWLEDGE_EMBEDDER", default=None)
KNOWLEDGE_CHUNKER = env.str("KNOWLEDGE_CHUNKER", default=None)
KNOWLEDGE_FUSER = env.str("KNOWLEDGE_FUSER", default=None)
KNOWLEDGE_RERANKER = env.str("KNOWLEDGE_RERANKER", default=None)
KNOWLEDGE_COMPRESSOR = env.str("KNOWLEDGE_COMPRESSOR", default=None)
KNOWLEDGE_PLUGINS_FILE = BASE_DIR / env.str("KNOWLEDGE_PLUGINS_FILE", default="plugins.json")
KNOWLEDGE_FUSION_ALPHA = cfg.unit_float("KNOWLEDGE_FUSION_ALPHA", 0.5)
KNOWLEDGE_MMR_LAMBDA = cfg.unit_float("KNOWLEDGE_MMR_LAMBDA", 0.7)
KNOWLEDGE_TOKEN_BUDGET = cfg.positive_int("KNOWLEDGE_TOKEN_BUDGET", 4000)
# Query pipeline stages (comma-separated names; unset: plugins.json `stages`, then the default tail).
KNOWLEDGE_STAGES = env.str("KNOWLEDGE_STAGES", default="")
KNOWLEDGE_FANOUT_RRF_K = cfg.positive_int("KNOWLEDGE_FANOUT_RRF_K", 60)

# --- LLM stages (an OpenAI-compatible chat-completions endpoint) --------------------------------------
KNOWLEDGE_LLM_BASE_URL = env.str("KNOWLEDGE_LLM_BASE_URL", default="https://api.openai.com/v1")
KNOWLEDGE_LLM_API_KEY = env.str("KNOWLEDGE_LLM_API_KEY", default="")
KNOWLEDGE_LLM_MODEL = env.str("KNOWLEDGE_LLM_MODEL", default="gpt-4o-mini")
KNOWLEDGE_LLM_TIMEOUT = cfg.positive_float("KNOWLEDGE_LLM_TIMEOUT", 10.0)
KNOWLEDGE_LLM_RETRIES = cfg.non_negative_int("KNOWLEDGE_LLM_RETRIES", 2)
KNOWLEDGE_LLM_MAX_TOKENS = cfg.positive_int("KNOWLEDGE_LLM_MAX_TOKENS", 512)
KNOWLEDGE_LLM_TOKEN_BUDGET = cfg.positive_int("KNOWLEDGE_LLM_TOKEN_BUDGET", 4000)

# --- Embedders ---------------------------------------------------------------------------------------
KNOWLEDGE_LOCAL_EMBEDDER_THREADS = cfg.non_negative_int("KNOWLEDGE_LOCAL_EMBEDDER_THREADS", 0)
# The `local` embedder's model, from its catalogue (knowledge/pipeline/embedders/local_models.py).
LOCAL_MODELS = ("all-minilm-l6-v2", "bge-small-en-v1.5")  # in any case
KNOWLEDGE_LOCAL_MODEL = cfg.choice("KNOWLEDGE_LOCAL_MODEL", LOCAL_MODELS, LOCAL_MODELS[0])
# Search queries through a quantized copy of the local model (int8 activations, built once into the cache).
KNOWLEDGE_LOCAL_EMBEDDER_QUERY_INT8 = cfg.boolean("KNOWLEDGE_LOCAL_EMBEDDER_QUERY_INT8", True)
KNOWLEDGE_MODEL_CACHE_DIR = BASE_DIR / env.str("KNOWLEDGE_MODEL_CACHE_DIR", default=".cache/models")
KNOWLEDGE_OPENAI_BASE_URL = env.str("KNOWLEDGE_OPENAI_BASE_URL", default="https://api.openai.com/v1")
KNOWLEDGE_OPENAI_API_KEY = env.str("KNOWLEDGE_OPENAI_API_KEY", default="")
KNOWLEDGE_OPENAI_MODEL = env.str("KNOWLEDGE_OPENAI_MODEL", default="text-embedding-3-small")
KNOWLEDGE_OPENAI_DIMENSION = cfg.positive_int("KNOWLEDGE_OPENAI_DIMENSION", 1536)
KNOWLEDGE_OPENAI_SEND_DIMENSIONS = cfg.boolean("KNOWLEDGE_OPENAI_SEND_DIMENSIONS", False)
KNOWLEDGE_OLLAMA_BASE_URL = env.str("KNOWLEDGE_OLLAMA_BASE_URL", default="http://127.0.0.1:11434")
KNOWLEDGE_OLLAMA_MODEL = env.str("KNOWLEDGE_OLLAMA_MODEL", default="nomic-embed-text")
KNOWLEDGE_OLLAMA_DIMENSION = cfg.positive_int("KNOWLEDGE_OLLAMA_DIMENSION", 768)
KNOWLEDGE_HTTP_EMBEDDER_BATCH = cfg.positive_int("KNOWLEDGE_HTTP_EMBEDDER_BATCH", 64)
KNOWLEDGE_HTTP_EMBEDDER_TIMEOUT = cfg.positive_float("KNOWLEDGE_HTTP_EMBEDDER_TIMEOUT", 30.0)
KNOWLEDGE_HTTP_EMBEDDER_RETRIES = cfg.non_negative_int("KNOWLEDGE_HTTP_EMBEDDER_RETRIES", 3)
KNOWLEDGE_RRF_K = cfg.positive_int("KNOWLEDGE_RRF_K", 60)
KNOWLEDGE_CANDIDATES_PER_LANE = cfg.positive_int("KNOWLEDGE_CANDIDATES_PER_LANE", 50)
KNOWLEDGE_DEFAULT_LANGUAGE = env.str("KNOWLEDGE_DEFAULT_LANGUAGE", default="english")
KNOWLEDGE_CHUNK_TOKENS = cfg.positive_int("KNOWLEDGE_CHUNK_TOKENS", 256)
KNOWLEDGE_CHUNK_OVERLAP = cfg.positive_int("KNOWLEDGE_CHUNK_OVERLAP", 32)
KNOWLEDGE_MAX_CONTENT_CHARS = cfg.positive_int("KNOWLEDGE_MAX_CONTENT_CHARS", 2_000_000)
KNOWLEDGE_MAX_CLIENT_CHUNK_CHARS = cfg.positive_int("KNOWLEDGE_MAX_CLIENT_CHUNK_CHARS", 100_000)
# --- Ingest jobs (README, "Background jobs") ---
# POST /api/v1/index writes a document up to this many characters in the request (about 225 chunks,
# seconds of embedding); a longer one, or any with `Prefer: respond-async`, becomes a job (202).
KNOWLEDGE_INLINE_INDEX_CHARS = cfg.positive_int("KNOWLEDGE_INLINE_INDEX_CHARS", 100_000)
KNOWLEDGE_BATCH_MAX_DOCUMENTS = cfg.positive_int("KNOWLEDGE_BATCH_MAX_DOCUMENTS", 1000)
KNOWLEDGE_MAX_BATCH_BYTES = cfg.positive_int("KNOWLEDGE_MAX_BATCH_BYTES", 50 * 1024 * 1024)
# A worker writes a job in slices (one transaction each) of at most this many documents and characters.
KNOWLEDGE_JOB_SLICE_DOCUMENTS = cfg.positive_int("KNOWLEDGE_JOB_SLICE_DOCUMENTS", 16)
KNOWLEDGE_JOB_SLICE_CHARS = cfg.positive_int("KNOWLEDGE_JOB_SLICE_CHARS", 100_000)
# An unfinished job untouched this long is woken again (its message or its worker was lost).
KNOWLEDGE_JOB_STALE_SECONDS = cfg.positive_int("KNOWLEDGE_JOB_STALE_SECONDS", 60)
# One task runs a job this long, then hands the rest to a fresh message (under the task time limit).
KNOWLEDGE_JOB_TASK_SECONDS = cfg.positive_int("KNOWLEDGE_JOB_TASK_SECONDS", 300)
KNOWLEDGE_JOB_RETENTION_DAYS = cfg.positive_int("KNOWLEDGE_JOB_RETENTION_DAYS", 7)
# Pipeline plugins by layer and alias, {"CLASS", "OPTIONS"} each, options from the values above.
KNOWLEDGE_PLUGINS = plugin_table(globals())

# --- REST API ----------------------------------------------------------------------------------------
KNOWLEDGE_MAX_REQUEST_BYTES = cfg.positive_int("KNOWLEDGE_MAX_REQUEST_BYTES", 10 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = KNOWLEDGE_MAX_REQUEST_BYTES
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["knowledge.api.authentication.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": ["knowledge.api.parsers.LimitedJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "EXCEPTION_HANDLER": "knowledge.api.errors.api_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_THROTTLE_CLASSES": ["knowledge.api.throttling.RateLimit"],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Knowledge retrieval API",
    "DESCRIPTION": "Permission-aware hybrid search over a tenant's knowledge base.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_AUTHENTICATION": [],
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "knowledge.api.jobs.batch_limits",
    ],
    # Swagger UI from our own static files (drf-spectacular-sidecar): no CDN, works offline. (No ReDoc:
    # its sidebar always loads a logo from a CDN.)
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # No online validator badge (it would send the schema URL to validator.swagger.io).
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
}

# --- Auth, i18n, static ------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
# `manage.py collectstatic` (make run does it) fills STATIC_ROOT with hashed, compressed copies that
# WhiteNoise serves with far-future cache headers.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

# --- Staff pages (playground, eval reports) ---------------------------------------------------------
# Saved `manage.py evals retrieval --json/--markdown` reports (and their PNG charts) listed at /evals/.
KNOWLEDGE_EVAL_REPORTS_DIR = BASE_DIR / env.str("KNOWLEDGE_EVAL_REPORTS_DIR", default="eval-reports")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("DJANGO_LOG_LEVEL", default="INFO")},
    # The OpenSearch and httpx clients log every request at INFO; failures still show as warnings.
    "loggers": {"opensearch": {"level": "WARNING"}, "httpx": {"level": "WARNING"}},
}
