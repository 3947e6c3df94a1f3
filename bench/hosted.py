"""The hosted connector kinds against their local stubs: documents/s of a full sync, a resync with
nothing changed and a permission-only sync, each beside the same documents written straight through
the write service in the same run (the baseline); and the latency from a membership change at the
source to a search that follows it (granted and revoked), on the configured backend."""

from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from knowledge.source_stubs import confluence, drive, github, slack
from knowledge.source_stubs.server import StubServer, serving

OWNER, JOINER = "owner@example.com", "joiner@example.com"
WORDS = "runbook failover replica backup restore latency quorum shard index vacuum".split()  # noqa: SIM905


def _text(i: int) -> str:
    words = [WORDS[(i * 7 + k) % len(WORDS)] for k in range(60)]
    return f"Runbook {i}: " + " ".join(words) + "."


@dataclass(frozen=True)
class HostedKind:
    """A kind's stub world of `n` documents, its connector settings, and a membership change there."""

    kind: str
    world: Callable[[int], Any]
    config: Callable[[str], dict[str, Any]]
    credential: Callable[[str], str]
    grant: Callable[[Any, bool], None]  # JOINER joins (True) or leaves (False) the group the ACL names


def _confluence(n: int) -> confluence.ConfluenceWorld:
    pages = {
        str(1000 + i): confluence.Page(f"Runbook {i}", f"<h1>Runbook {i}</h1><p>{_text(i)}</p>", "S1")
        for i in range(n)
    }
    return confluence.ConfluenceWorld(
        spaces={"S1": "OPS"},
        readers={"S1": [("group", "gops")]},
        groups={"gops": ("ops", ["a0"])},
        accounts={"a0": OWNER, "a1": JOINER},
        pages=pages,
        page_size=25,
    )


def _confluence_grant(world: confluence.ConfluenceWorld, join: bool) -> None:
    world.groups["gops"] = ("ops", ["a0", "a1"] if join else ["a0"])


def _drive(n: int) -> drive.DriveWorld:
    files = {"F": drive.DriveFile("Ops", drive.FOLDER, parents=["root"])}
    for i in range(n):
        files[f"d{i}"] = drive.DriveFile(
            f"Runbook {i}",
            drive.DOC,
            f"<h1>Runbook {i}</h1><p>{_text(i)}</p>".encode(),
            parents=["F"],
            permissions=[drive.user(OWNER, "owner"), drive.group("ops@example.com")],
        )
    groups = {"ops@example.com": [OWNER]}
    return drive.DriveWorld(files=files, groups=groups, users=[OWNER, JOINER], page_size=100)


def _drive_grant(world: drive.DriveWorld, join: bool) -> None:
    world.groups["ops@example.com"] = [OWNER, JOINER] if join else [OWNER]


def _github(n: int) -> github.GithubWorld:
    files = {f"docs/runbook-{i}.md": f"# Runbook {i}\n{_text(i)}" for i in range(n // 2)}
    issues = {
        i + 1: github.Issue(f"Runbook {i} question", _text(i), comments=[("owner", "See the runbook.")])
        for i in range(n - len(files))
    }
    return github.GithubWorld(
        repo="ops",
        files=files,
        issues=issues,
        teams={"ops": ["owner"]},
        emails={"owner": OWNER, "joiner": JOINER},
        page_size=100,
    )


def _github_grant(world: github.GithubWorld, join: bool) -> None:
    world.teams["ops"] = ["owner", "joiner"] if join else ["owner"]


def _slack(n: int) -> slack.SlackWorld:
    world = slack.SlackWorld(page_size=200)
    world.user("U0", "owner", OWNER)
    world.user("U1", "joiner", JOINER)
    world.user("UB", "kb-bot", None, is_bot=True)
    world.channels = {"C1": slack.Channel("ops", ["U0", "UB"])}
    start = time.time() - 3 * n - 60
    for i in range(n):
        parent = world.post("C1", "U0", _text(i), start + 3 * i)
        world.reply("C1", parent, "U0", f"Runbook {i} is done.", start + 3 * i + 1)
    return world


def _slack_grant(world: slack.SlackWorld, join: bool) -> None:
    world.channels["C1"].members = ["U0", "UB", "U1"] if join else ["U0", "UB"]


KINDS = (
    HostedKind(
        "confluence",
        _confluence,
        lambda url: {"site_url": url},
        lambda url: confluence.CREDENTIAL,
        _confluence_grant,
    ),
    HostedKind(
        "google_drive",
        _drive,
        lambda url: {"domain": "example.com", "subject": drive.SUBJECT, "folders": ["F"], "api_url": url},
        lambda url: drive.service_account_key(f"{url}/token"),
        _drive_grant,
    ),
    HostedKind(
        "github",
        _github,
        lambda url: {"repository": "acme/ops", "api_url": url, "web_url": url},
        lambda url: github.TOKEN,
        _github_grant,
    ),
    HostedKind("slack", _slack, lambda url: {"api_url": url}, lambda url: slack.TOKEN, _slack_grant),
)


def _connector(hosted: HostedKind, server: StubServer) -> Any:
    from knowledge.models import Connector, Principal, Tenant

    tenant = Tenant.objects.create(slug=f"bench-hosted-{hosted.kind}-{time.time_ns()}", name="bench")
    for email in (OWNER, JOINER):
        Principal.objects.create(tenant=tenant, kind="user", external_id=email)
    connector = Connector(tenant=tenant, name=hosted.kind, kind=hosted.kind, config=hosted.config(server.url))
    connector.set_credential(hosted.credential(server.url))
    connector.save()
    return connector


def _visible_to(connector: Any, email: str) -> int:
    """How many of the connector's documents a keyword search as `email` returns."""
    from knowledge.models import ApiKey
    from knowledge.search import search_chunks
    from knowledge.selectors.scopes import search_scope_for_key

    scope = search_scope_for_key(key=ApiKey(tenant=connector.tenant, on_behalf_of=True), on_behalf_of=email)
    hits = search_chunks(scope=scope, query_text="runbook", lanes=("keyword",), limit=20).hits
    return len({h.document_id for h in hits})


def _timed(call: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    result = call()
    return result, time.perf_counter() - started


def _baseline(connector: Any, hosted: HostedKind, server: StubServer) -> tuple[int, float]:
    """The kind's documents, listed once more, written straight to an API connector: (documents, s)."""
    from knowledge.connectors.registry import connector_kind
    from knowledge.models import Connector
    from knowledge.services.writes import documents_write

    listing = connector_kind(hosted.kind).list_source(
        hosted.config(server.url), None, credential=hosted.credential(server.url)
    )
    target = Connector.objects.create(tenant=connector.tenant, name="baseline", kind="api")
    stats, seconds = _timed(lambda: documents_write(connector=target, documents=listing.documents))
    return stats.documents, seconds


def _joiner_sees(connector: Any, expected: bool) -> bool:
    return (_visible_to(connector, JOINER) > 0) == expected


def _wait_until(condition: Callable[[], bool], failure: str, seconds: float = 30) -> None:
    started = time.perf_counter()
    while not condition():
        if time.perf_counter() - started > seconds:
            raise RuntimeError(f"{failure} after {seconds:.0f} s")
        time.sleep(0.01)


def _membership_latency(connector: Any, hosted: HostedKind, world: Any, reps: int) -> dict[str, Any]:
    """Seconds from a membership change at the source to the first search that follows it."""
    from knowledge.services.permission_sync import connector_permissions_sync

    granted: list[float] = []
    revoked: list[float] = []
    for _ in range(reps):
        for join, samples in ((True, granted), (False, revoked)):
            hosted.grant(world, join)
            started = time.perf_counter()
            connector_permissions_sync(connector=connector)
            _wait_until(
                functools.partial(_joiner_sees, connector, join),
                f"{hosted.kind}: search did not follow the membership change (join={join})",
            )
            samples.append(time.perf_counter() - started)
    return {
        "grant_ms_median": round(statistics.median(granted) * 1000, 1),
        "revoke_ms_median": round(statistics.median(revoked) * 1000, 1),
        "revoke_ms_max": round(max(revoked) * 1000, 1),
    }


def measure(hosted: HostedKind, documents: int, reps: int = 3) -> dict[str, Any]:
    """One kind's figures (see the module docstring) with a world of `documents` items."""
    from knowledge.services.connector_sync import connector_sync
    from knowledge.services.index_sync import index_reconcile
    from knowledge.services.permission_sync import connector_permissions_sync

    world = hosted.world(documents)
    with serving(world.stub()) as server:
        connector = _connector(hosted, server)
        full, full_s = _timed(lambda: connector_sync(connector=connector))
        if full.errors:
            raise RuntimeError(f"{hosted.kind}: the sync failed: {full.errors[:3]}")
        written = full.stats.documents if full.stats else 0
        index_reconcile(time_budget=None)  # an external index gets the documents (no-op on postgres)
        _wait_until(lambda: _visible_to(connector, OWNER) > 0, f"{hosted.kind}: the owner sees nothing")
        _, resync_s = _timed(lambda: connector_sync(connector=connector))
        _, permissions_s = _timed(lambda: connector_permissions_sync(connector=connector))
        baseline_docs, baseline_s = _baseline(connector, hosted, server)
        latency = _membership_latency(connector, hosted, world, reps)
        requests = len(server.requests)
    return {
        "documents": written,
        "full_sync_docs_per_s": round(written / full_s, 1),
        "resync_unchanged_docs_per_s": round(written / resync_s, 1),
        "permission_sync_docs_per_s": round(written / permissions_s, 1),
        "baseline_write_docs_per_s": round(baseline_docs / baseline_s, 1),
        "full_sync_vs_baseline": round((written / full_s) / (baseline_docs / baseline_s), 3),
        "http_requests": requests,
        **latency,
        "tenant": connector.tenant_id,
    }


def drop(tenant_id: int) -> None:
    """Remove a measured tenant and everything in it."""
    from knowledge.models import Tenant

    Tenant.objects.filter(pk=tenant_id).delete()
