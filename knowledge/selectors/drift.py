"""How far an external index is behind PostgreSQL, per connector (for the admin's connector list)."""

from __future__ import annotations

from django.db.models import Count, F, IntegerField, Min, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from knowledge.models import Connector, IndexTombstone

DIRTY = Q(documents__index_version__gt=F("documents__synced_version"))


def connectors_with_drift(queryset: QuerySet[Connector]) -> QuerySet[Connector]:
    """Annotate `dirty`, `tombstones` and `oldest_dirty` on each connector."""
    tombstones = (
        IndexTombstone.objects.filter(connector_id=OuterRef("pk"))
        .order_by()
        .values("connector_id")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return queryset.annotate(
        dirty=Count("documents", filter=DIRTY),
        oldest_dirty=Min("documents__index_changed_at", filter=DIRTY),
        tombstones=Coalesce(Subquery(tombstones, output_field=IntegerField()), 0),
    )
