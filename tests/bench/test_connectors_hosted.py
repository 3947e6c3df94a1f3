"""bench/connectors.py --hosted at smoke size: each hosted kind syncs its stub world, the baseline
writes the same documents, and search follows a membership change both ways."""

from __future__ import annotations

import pytest

from bench.hosted import JOINER, KINDS, HostedKind, _visible_to, drop, measure
from knowledge.models import Connector, Tenant

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("hosted", KINDS, ids=lambda k: k.kind)
def test_each_kind_reports_its_figures(hosted: HostedKind) -> None:
    figures = measure(hosted, documents=6, reps=1)
    assert figures["documents"] == 6
    for rate in ("full_sync", "resync_unchanged", "permission_sync", "baseline_write"):
        assert figures[f"{rate}_docs_per_s"] > 0, rate
    assert figures["full_sync_vs_baseline"] > 0 and figures["http_requests"] > 6
    assert 0 < figures["grant_ms_median"] < 30_000 and 0 < figures["revoke_ms_max"] < 30_000
    connector = Connector.objects.get(tenant_id=figures["tenant"], kind=hosted.kind)
    assert _visible_to(connector, JOINER) == 0  # the last change left the joiner out again
    drop(figures["tenant"])
    assert not Tenant.objects.filter(pk=figures["tenant"]).exists()
