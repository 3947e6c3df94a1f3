#!/usr/bin/env bash
# A streaming read replica of this checkout's PostgreSQL (for the read-replica routing and its test).
# pg0 only initialises new clusters, so the replica is made from the binaries pg0 installed:
# pg_basebackup -R (a standby that streams from the primary), then pg_ctl as the service user.
# Usage: scripts/pg_replica.sh up|down|status
#   PG_REPLICA_PORT   its port on 127.0.0.1 (default: the primary's + 4, inside this checkout's block)
# `up` prints KNOWLEDGE_READ_REPLICA_URL=...; `down` stops it and deletes its data directory.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$REPO/scripts/checkout.sh"
PG_USER="${PG_SYSTEM_USER:-kbpg}"
PG_HOME="/var/lib/$PG_USER"
PORT="${PG_REPLICA_PORT:-$((PG_PORT + 4))}"
DATA="$PG_HOME/replica-$PG_INSTANCE"
DB="${PG_DATABASE:-knowledge}"

log() { printf '[pg-replica] %s\n' "$*"; }
die() { printf '[pg-replica] ERROR: %s\n' "$*" >&2; exit 1; }

bin_dir() {
  local found
  found="$(ls -d "$PG_HOME"/.pg0/installation/*/bin 2>/dev/null | sort -V | tail -n 1)"
  [ -n "$found" ] || die "no pg0 installation under $PG_HOME/.pg0; run 'scripts/services.sh up postgres' first"
  echo "$found"
}

# pg0's server links its own ICU and friends, as pg0 itself starts it.
as_pg() {
  local lib; lib="$(dirname "$(bin_dir)")/lib"
  (cd "$PG_HOME" && runuser -u "$PG_USER" -- env PGPASSWORD=postgres LD_LIBRARY_PATH="$lib" "$@")
}

running() { [ -f "$DATA/postmaster.pid" ] && kill -0 "$(head -n 1 "$DATA/postmaster.pid")" 2>/dev/null; }

up() {
  [ "$(id -u)" -eq 0 ] || die "needs root (it runs the server as $PG_USER)"
  local bin; bin="$(bin_dir)"
  if running; then
    log "already running on 127.0.0.1:$PORT"
  else
    rm -rf "$DATA"
    log "copying the primary (127.0.0.1:$PG_PORT) with pg_basebackup"
    as_pg "$bin/pg_basebackup" -h 127.0.0.1 -p "$PG_PORT" -U postgres -D "$DATA" -R -X stream -c fast \
      || die "pg_basebackup failed"
    # A standby refuses to replay with lower limits than its primary's (set on pg0's command line).
    local limits
    limits="$(as_pg "$bin/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -Atc \
      "SELECT string_agg('-c ' || name || '=' || setting, ' ') FROM pg_settings WHERE name IN
       ('max_connections', 'max_worker_processes', 'max_wal_senders', 'max_prepared_transactions',
        'max_locks_per_transaction')")"
    as_pg "$bin/pg_ctl" -D "$DATA" -l "$DATA/replica.log" -w -t 60 start \
      -o "-p $PORT -c listen_addresses=127.0.0.1 -c hot_standby=on -c hot_standby_feedback=on $limits" \
      >/dev/null || die "the replica did not start; see $DATA/replica.log"
    log "streaming from the primary on 127.0.0.1:$PORT"
  fi
  echo "KNOWLEDGE_READ_REPLICA_URL=postgres://postgres:postgres@127.0.0.1:$PORT/$DB"
}

down() {
  if running; then
    as_pg "$(bin_dir)/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null
    log "stopped"
  fi
  rm -rf "$DATA"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) if running; then log "running on 127.0.0.1:$PORT"; else log "not running"; exit 1; fi ;;
  *) die "usage: $0 up|down|status" ;;
esac
