#!/usr/bin/env bash
# Clones this repository twice and runs `make test` in both at the same time: each clone starts its
# own PostgreSQL instance, Redis and OpenSearch node (scripts/checkout.sh), so both must pass, and
# `make stop` in one must leave the other's services up. Slow (two full suites on one machine).
# Usage: scripts/two_checkouts.sh [WORKDIR]   (default: a new temporary folder)
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="${1:-$(mktemp -d /tmp/kb-two-checkouts-XXXX)}"
for name in one two; do
  [ -d "$WORK/$name" ] || git clone -q "$REPO" "$WORK/$name"
done
started=$(date +%s)
(cd "$WORK/one" && make test > "$WORK/one.log" 2>&1; echo $? > "$WORK/one.rc") &
(cd "$WORK/two" && make test > "$WORK/two.log" 2>&1; echo $? > "$WORK/two.rc") &
wait
one=$(cat "$WORK/one.rc"); two=$(cat "$WORK/two.rc")
echo "make test in two clones at once: one exit $one, two exit $two, $(( $(date +%s) - started )) s (logs: $WORK/*.log)"
(cd "$WORK/one" && make stop >/dev/null 2>&1)
if (cd "$WORK/two" && scripts/services.sh status >/dev/null); then
  echo "make stop in one left two's services up"
else
  echo "make stop in one stopped two's services" >&2; exit 1
fi
(cd "$WORK/two" && make stop >/dev/null 2>&1)
[ "$one" = 0 ] && [ "$two" = 0 ]
