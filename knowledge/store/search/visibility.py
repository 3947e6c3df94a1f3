"""How many vectors a search scope may see, and what fraction of its tenant's space that is.

The vector lane picks its path (exact scan or HNSW) and its `ef_search` from these. The planner
multiplies the selectivities of the scope's clauses as if they were independent, and in a database
shared by tenants two correlations make that wrong by orders of magnitude:

* a tenant's rows carry its own models, dimensions and connectors: extended statistics on those
  columns (migration 0019) give the planner their joint frequencies;
* a tenant's rows carry its own ACL tokens (a principal belongs to one tenant; `public` is in every
  tenant), and the planner estimates `acl_tokens && tokens` over the whole table: a small tenant's
  public scope came out at 1 % of its rows (71 of 6,657), so every search of it scanned all 6,657
  exactly. The fraction the tokens let through is read instead from the MCV list of the extended
  statistics on (tenant_id, acl_tokens): the sampled frequency of each distinct ACL of each tenant.
  Where that list does not cover most of the tenant's sampled rows (too many distinct ACLs), the
  planner's estimate stands.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from knowledge.store.sql import EMBEDDING, lane_fetch, scope_filter
from retrieval_backends.types import SearchScope

ACL_STATISTICS = "knowledge_chunkembedding_tenant_acl"
MIN_COVERAGE = 0.5  # share of the tenant's rows the ACL list must describe to be trusted

ACL_SHARE_SQL = f"""
SELECT coalesce(sum(s.f[i]) FILTER (WHERE s.v[i][s.acl]::varchar[] && %s::varchar[]), 0),
       coalesce(sum(s.f[i]), 0),
       (SELECT greatest(c.reltuples, 0) FROM pg_class c WHERE c.oid = '{EMBEDDING}'::regclass)
FROM (SELECT most_common_vals AS v, most_common_freqs AS f,
             array_position(attnames, 'acl_tokens'::name) AS acl,
             array_position(attnames, 'tenant_id'::name) AS tenant
      FROM pg_stats_ext
      WHERE schemaname = current_schema() AND tablename = '{EMBEDDING}'
        AND statistics_name = '{ACL_STATISTICS}') s,
     generate_subscripts(s.f, 1) i
WHERE s.v[i][s.tenant]::bigint = %s
"""


@dataclass(frozen=True)
class Visibility:
    """Estimated visible vectors, and their share of the tenant's vectors of that model."""

    rows: float
    fraction: float


def candidate_where(
    scope: SearchScope, dimensions: int, model: str | None, *, tenant_tokens: bool = False
) -> tuple[str, list[Any]]:
    """The lane's WHERE clause. With `tenant_tokens` the ACL is matched through the tenant-prefixed
    token index (the exact path: it then reads only the scope's visible rows)."""
    where, params = scope_filter("e", replace(scope, bypass_acl=True) if tenant_tokens else scope)
    where = f"e.dimensions = {int(dimensions)} AND {where}"
    if tenant_tokens and not scope.bypass_acl:
        # The prefixed tokens name the tenant already; `+ 0` keeps the planner from ANDing in a
        # bitmap of every row of the tenant.
        where = where.replace("e.tenant_id = %s", "e.tenant_id + 0 = %s", 1)
        where += f" AND {TENANT_TOKENS} && %s::text[]"
        params.append(prefixed_tokens(scope))
    if model is not None:
        where += " AND e.model = %s"
        params.append(model)
    return where, params


TENANT_TOKENS = "knowledge_tenant_tokens(e.tenant_id, e.acl_tokens)"


def prefixed_tokens(scope: SearchScope) -> list[str]:
    return [f"{int(scope.tenant_id)}:{token}" for token in sorted(scope.principal_tokens)]


def _explain(where: str, params: list[Any]) -> tuple[str, list[Any]]:
    return f"EXPLAIN (FORMAT JSON) SELECT 1 FROM {EMBEDDING} e WHERE {where}", params


def _plan_rows(rows: list[tuple[Any, ...]]) -> float:
    plan = rows[0][0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    return float(plan[0]["Plan"]["Plan Rows"])


def estimate_visibility(
    scope: SearchScope, dimensions: int, model: str | None, timeout_ms: int
) -> Visibility:
    """The scope's visible vectors of `model` and `dimensions`, estimated in one round trip."""
    space = "e.dimensions = %s AND e.tenant_id = %s" + (" AND e.model = %s" if model is not None else "")
    space_params = [dimensions, scope.tenant_id] + ([model] if model is not None else [])
    statements = [_explain(*candidate_where(scope, dimensions, model)), _explain(space, space_params)]
    if not scope.bypass_acl:  # else the visible rows are the scope's other clauses' already
        statements += [
            _explain(*candidate_where(replace(scope, bypass_acl=True), dimensions, model)),
            _explain("e.tenant_id = %s", [scope.tenant_id]),
            (ACL_SHARE_SQL, [sorted(scope.principal_tokens), scope.tenant_id]),
            _explain(f"{TENANT_TOKENS} && %s::text[]", [prefixed_tokens(scope)]),
        ]
    results = lane_fetch(timeout_ms, statements)
    visible, space_rows = _plan_rows(results[0]), _plan_rows(results[1])
    if not scope.bypass_acl:
        base, tenant_rows = _plan_rows(results[2]), _plan_rows(results[3])
        # The tenant's own token frequencies (statistics of the tenant-token index's expression),
        # not the product of a tenant's share and a token's share of the whole table, which put a
        # fully visible 9,251-vector tenant at 145 rows.
        tokens = min(1.0, _plan_rows(results[5]) / max(tenant_rows, 1.0))
        visible = base * acl_share(results[4][0], tenant_rows, planner=tokens)
    return Visibility(rows=visible, fraction=min(1.0, visible / max(space_rows, 1.0)))


def acl_share(row: tuple[Any, ...], tenant_rows: float, *, planner: float) -> float:
    """The share of the tenant's rows the scope's tokens let through: from the sampled ACLs when
    they describe most of the tenant's rows, else the planner's."""
    visible, sampled, table_rows = (float(v or 0) for v in row)
    described = sampled * table_rows  # the tenant's rows the list describes
    if sampled <= 0 or described < MIN_COVERAGE * tenant_rows:
        return planner
    # The rows the list leaves out (ACLs too rare to be listed) at the planner's share.
    rest = max(0.0, tenant_rows - described)
    return min(1.0, (visible * table_rows + rest * planner) / max(tenant_rows, described))
