"""Each tenant's access version: raised with every change that can hide a chunk, for read replicas."""

from __future__ import annotations

from django.db import models


class TenantAccessMark(models.Model):
    """How many committed transactions have changed what a tenant's chunks let through (an ACL, a
    deletion, an environment). A deferred trigger on the chunk table (migration 0035) raises it once
    per transaction, at commit, in that transaction: a copy of the database that holds version N has
    replayed every access change up to the N-th. A read replica serves a tenant's search only when
    its version is the primary's (`knowledge.store.replica`). No foreign key: the row outlives a
    deleted tenant, whose chunks' deletion raises it while the tenant row goes."""

    tenant_id = models.BigIntegerField(primary_key=True)
    version = models.BigIntegerField(default=0)
    changed_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"tenant {self.tenant_id}: access version {self.version}"
