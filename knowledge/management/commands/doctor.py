"""Checks the deployment (database, Redis, backend and its store, plugins, indexes) and says what to fix."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from config.celery import app
from knowledge.checks import plugin_hint
from knowledge.evals.datasets import is_eval_tenant
from knowledge.models import Tenant
from knowledge.pipeline.active import active_embedder, active_spec
from knowledge.pipeline.embedders.local import LocalEmbedder
from knowledge.pipeline.embedders.query_model import built_query_model
from knowledge.pipeline.validation import validate_pipeline
from knowledge.selectors.vector_indexes import vector_index_states
from knowledge.services.documents import CLIENT_MODEL
from knowledge.services.vector_indexes import serving_threshold
from knowledge.store import diagnostics
from knowledge.store.lookups import has_keyword_statistics, text_search_languages
from knowledge.store.replica import replica_lag_seconds
from knowledge.store.vectors import embedding_inventory
from retrieval_backends.base import ExternalIndex
from retrieval_backends.registry import get_backend


@dataclass(frozen=True)
class Finding:
    status: str  # OK, WARN or FAIL
    subject: str
    message: str
    fix: str = ""


def _ok(subject: str, message: str) -> Finding:
    return Finding("OK", subject, message)


def check_database() -> list[Finding]:
    try:
        version = diagnostics.server_version()
    except Exception as exc:  # any failure to connect is the finding
        return [
            Finding(
                "FAIL",
                "database",
                f"unreachable: {exc}".strip(),
                "check DATABASE_URL and that PostgreSQL runs (`scripts/services.sh up core` in development)",
            )
        ]
    return [_ok("database", f"reachable (PostgreSQL {version})")]


def check_redis() -> list[Finding]:
    client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2, socket_timeout=2)
    try:
        client.ping()
    except Exception as exc:  # connection, auth and timeout errors all mean "not usable"
        return [Finding("FAIL", "redis", f"unreachable: {exc}", "check REDIS_URL and that Redis runs")]
    finally:
        client.close()
    return [_ok("redis", "reachable")]


QUEUES = ("priority", "bulk")


def check_workers() -> list[Finding]:
    """Whether some Celery worker consumes each queue (a missing bulk worker leaves jobs queued)."""
    try:
        replies = app.control.inspect(timeout=1.0).active_queues() or {}
    except Exception as exc:  # the broker is down: already a Redis FAIL
        return [Finding("WARN", "workers", f"cannot ask the workers: {exc}")]
    consumed = {queue["name"] for queues in replies.values() for queue in queues}
    missing = [q for q in QUEUES if q not in consumed]
    if missing:
        fix = "start them as `make run` does (README, Workers and queues): " + "; ".join(
            f"celery -A config worker -Q {q} -n {q}@%h" for q in missing
        )
        return [Finding("WARN", "workers", f"no worker consumes the {', '.join(missing)} queue(s)", fix)]
    return [_ok("workers", f"{len(replies)} worker(s) consume {', '.join(QUEUES)}")]


def check_backend() -> list[Finding]:
    name = str(settings.RETRIEVAL_BACKEND)
    try:
        backend = get_backend()
        backend.health()
    except Exception as exc:  # ImproperlyConfigured, BackendUnavailable, ...
        return [Finding("FAIL", "retrieval backend", f"{name}: {exc}", "check KNOWLEDGE_RETRIEVAL_BACKEND")]
    findings = [_ok("retrieval backend", f"{name} is healthy")]
    findings += [Finding(*check) for check in (*diagnostics.pgvector_findings(), *backend.doctor_checks())]
    if isinstance(backend, ExternalIndex):
        findings += index_drift(backend)
    return findings


def index_drift(backend: ExternalIndex) -> list[Finding]:
    """Whether the index holds as many chunks per tenant as PostgreSQL."""
    canonical, indexed = diagnostics.chunks_per_tenant(), backend.indexed_chunks_per_tenant()
    slugs = dict(Tenant.objects.values_list("pk", "slug"))
    fix = "run `manage.py index_sync` (or wait for the reconciler)"
    findings = [
        Finding(
            "WARN",
            "index drift",
            f"tenant {slugs.get(tenant_id, tenant_id)}: the index holds {indexed.get(tenant_id, 0)} chunks, "
            f"PostgreSQL {canonical.get(tenant_id, 0)}",
            fix,
        )
        for tenant_id in sorted(set(canonical) | set(indexed))
        if indexed.get(tenant_id, 0) != canonical.get(tenant_id, 0)
    ]
    return findings or [_ok("index drift", "the index holds as many chunks per tenant as PostgreSQL")]


def check_plugins() -> list[Finding]:
    findings = []
    for report in validate_pipeline(deep=True):
        if report.ok and report.choice:
            label = f"{report.choice.name} (from {report.choice.origin})"
            findings.append(_ok(report.layer, f"{label}: {report.detail}"))
        else:
            problems = " ".join(p.removeprefix(f"{report.layer} ") for p in report.problems)
            findings.append(Finding("FAIL", report.layer, problems, plugin_hint(report.layer)))
    return findings


def check_keyword_statistics() -> list[Finding]:
    findings = []
    for tenant in Tenant.objects.order_by("slug"):
        languages = text_search_languages(tenant.pk, None)
        if languages and not has_keyword_statistics(tenant.pk, languages):
            findings.append(
                Finding(
                    "WARN",
                    "keyword statistics",
                    f"tenant {tenant.slug}: missing for {', '.join(languages)}, so keyword search ranks "
                    "with ts_rank instead of BM25",
                    f"run `manage.py rebuild_keyword_statistics --tenant {tenant.slug}`",
                )
            )
    return findings or [_ok("keyword statistics", "present for every tenant with chunks")]


EVAL_FIX = "re-run `manage.py evals retrieval` (add --reingest for a BEIR corpus), or delete the tenant"


def check_embeddings() -> list[Finding]:
    try:
        spec = active_spec()
        embedder = active_embedder()
    except Exception:  # already reported by the plugin check
        return []
    active = f"{embedder.name} ({embedder.dimension} dimensions)"
    fix = (
        f"run `manage.py reindex --embedder {spec}` to re-embed every chunk with it, or set "
        "KNOWLEDGE_EMBEDDER back to the embedder that wrote the stored vectors"
    )
    rows = embedding_inventory(embedder.name, embedder.dimension, [CLIENT_MODEL])
    findings = []
    for slug, embedded, current, others in rows:
        held = ", ".join(others or [])
        if current == 0 and is_eval_tenant(slug):
            message = (
                f"evaluation corpus {slug}: its chunks hold {held}, not the active embedder {active}; "
                "evals on it would measure no vector lane"
            )
            findings.append(Finding("WARN", "embeddings", message, EVAL_FIX))
        elif current == 0:
            message = (
                f"tenant {slug}: the indexed chunks hold {held}, but the active embedder is {active}; "
                "text queries will find no vectors"
            )
            findings.append(Finding("FAIL", "embeddings", message, fix))
        elif current < embedded:
            message = (
                f"tenant {slug}: {embedded - current} of {embedded} embedded chunks have no vector from the "
                f"active embedder {active} (they hold {held})"
            )
            findings.append(Finding("WARN", "embeddings", message, fix))
    return findings or [_ok("embeddings", f"indexed chunks match the active embedder {active}")]


def check_query_model() -> list[Finding]:
    try:
        embedder = active_embedder()
    except Exception:  # already reported by the plugin check
        return []
    if not isinstance(embedder, LocalEmbedder) or not settings.KNOWLEDGE_LOCAL_EMBEDDER_QUERY_INT8:
        return []
    if not embedder.model.query_copy:
        return []
    built = built_query_model(embedder.model.model_file)
    if built is None:
        message = "the quantized query model is not built yet: the first search builds it (about 4 s)"
        return [Finding("WARN", "query model", message, "run `manage.py prepare_embedder`")]
    return [_ok("query model", f"search queries use the quantized copy {built}")]


def check_vector_indexes() -> list[Finding]:
    """Tenants past the threshold without their own HNSW graph search exactly, which grows slow."""
    threshold = serving_threshold()
    if threshold is None:
        return []
    states = vector_index_states(min_vectors=threshold)
    due = [s for s in states if s.state in ("missing", "invalid", "orphaned")]
    if due:
        names = ", ".join(f"{s.tenant} ({s.space.dimensions}-d, {s.state})" for s in due[:5])
        fix = "the bulk worker builds them within minutes; or run `manage.py vector_indexes --apply`"
        return [Finding("WARN", "vector indexes", f"{len(due)} tenant graph(s) due: {names}", fix)]
    ready = sum(1 for s in states if s.state == "ready")
    return [_ok("vector indexes", f"{ready} tenant graph(s) ready; smaller tenants are searched exactly")]


def check_read_replica() -> list[Finding]:
    alias = getattr(get_backend(), "read_replica", None)
    if alias is None:
        return []
    try:
        lag = replica_lag_seconds(alias)
    except Exception as exc:  # unreachable: searches stay on the primary
        message = f"unreachable ({exc}); searches run on the primary"
        return [Finding("WARN", "read replica", message, "check KNOWLEDGE_READ_REPLICA_URL")]
    return [_ok("read replica", f"streaming, {lag:.1f} s behind; a tenant's search uses it once it "
                "has replayed the tenant's last access change")]  # fmt: skip


DATABASE_CHECKS: tuple[Callable[[], list[Finding]], ...] = (
    check_backend,
    check_keyword_statistics,
    check_embeddings,
    check_vector_indexes,
    check_read_replica,
)


class Command(BaseCommand):
    help = "Check the database, pgvector, Redis, backend, pipeline plugins and indexes; exit 1 on FAIL."

    def handle(self, *args: Any, **options: Any) -> None:
        findings = check_database()
        database_up = findings[0].status == "OK"
        findings += check_redis()
        if findings[-1].status == "OK":
            findings += check_workers()
        findings += check_plugins()
        findings += check_query_model()
        for check in DATABASE_CHECKS if database_up else ():
            findings += check()
        for finding in findings:
            self._print(finding)
        failures = sum(1 for f in findings if f.status == "FAIL")
        if failures:
            raise CommandError(f"doctor: {failures} check(s) failed")

    def _print(self, finding: Finding) -> None:
        style = {"OK": self.style.SUCCESS, "WARN": self.style.WARNING}.get(finding.status, self.style.ERROR)
        line = f"{style(finding.status.ljust(4))} {finding.subject}: {finding.message}"
        self.stdout.write(f"{line} → {finding.fix}" if finding.fix else line)
