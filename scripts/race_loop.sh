#!/usr/bin/env bash
# Runs the race and property suites N times in a row (default 20) and prints how many runs passed:
# the figure the README gives for "green N times out of N". Each run is a fresh pytest process.
# Usage: scripts/race_loop.sh [N]
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
RUNS="${1:-20}"
SUITE=(
  tests/knowledge/test_write_races.py
  tests/knowledge/test_index_sync_order.py
  tests/knowledge/test_index_sync_property.py
  tests/knowledge/test_write_paths_property.py
  tests/knowledge/connectors/test_source_boundary_property.py
  tests/api/test_acl_property.py
)
passed=0
started=$(date +%s)
for run in $(seq 1 "$RUNS"); do
  if OPENSEARCH_REQUIRED=1 .venv/bin/pytest -q -p no:cacheprovider "${SUITE[@]}" > ".services/race-loop-$run.log" 2>&1; then
    passed=$((passed + 1))
    rm -f ".services/race-loop-$run.log"
  else
    echo "run $run failed: .services/race-loop-$run.log"
  fi
  echo "run $run: $passed/$run passed ($(( $(date +%s) - started )) s)"
done
echo "race and property suites: $passed of $RUNS runs passed in $(( $(date +%s) - started )) s"
[ "$passed" = "$RUNS" ]
