#!/usr/bin/env bash
# Start, stop or report the services the project needs (PostgreSQL+pgvector, Redis, optionally OpenSearch).
# Idempotent: `up` does nothing for a service that is already running.
# Usage: scripts/services.sh up|down|status [postgres|redis|opensearch|all]
# PG_SHARED_BUFFERS sets PostgreSQL's shared_buffers (default 512MB; a million chunks want several GB, README "Scale").
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# This checkout's own ports, pg0 instance and state directory (and .services/checkout.env).
source "$REPO/scripts/checkout.sh"
PG_USER="${PG_SYSTEM_USER:-kbpg}"
PG_HOME="/var/lib/$PG_USER"
PG_NAME="$PG_INSTANCE"
PG_DB="${PG_DATABASE:-knowledge}"
# A DATABASE_URL on the embedded server names the database to create.
case "${DATABASE_URL:-}" in
  *@127.0.0.1:"$PG_PORT"/*|*@localhost:"$PG_PORT"/*) PG_DB="${DATABASE_URL##*/}"; PG_DB="${PG_DB%%\?*}" ;;
esac
VENV="${VENV:-$REPO/.venv}"

log() { printf '[services] %s\n' "$*"; }
die() { printf '[services] ERROR: %s\n' "$*" >&2; exit 1; }

need_root_or_user() {
  if [ "$(id -u)" -ne 0 ]; then
    die "PostgreSQL setup needs root (to create the '$PG_USER' system user); or set DATABASE_URL to your own PostgreSQL."
  fi
}

pg0_bin() { echo "$PG_HOME/pg0"; }

pg_install() {
  need_root_or_user
  id "$PG_USER" >/dev/null 2>&1 || useradd --system --create-home --home-dir "$PG_HOME" --shell /usr/sbin/nologin "$PG_USER"
  local src
  src="$("$VENV/bin/python" -c 'import pg0, pathlib; print(pathlib.Path(pg0.__file__).parent / "bin" / "pg0")')"
  [ -x "$src" ] || die "pg0 binary not found in the venv; run 'make install' first."
  # /root is mode 700: the server user needs its own copy of the binary.
  if ! cmp -s "$src" "$(pg0_bin)"; then install -m 755 -o "$PG_USER" "$src" "$(pg0_bin)"; fi
}

# The postmaster's own PID file, not `pg0 info`: that reads pg0's shared state, which another
# checkout's pg0 start or stop may be rewriting at that moment (seen as a false "down").
pg_running() {
  local pidfile="$PG_HOME/.pg0/instances/$PG_NAME/data/postmaster.pid"
  [ -f "$pidfile" ] || return 1
  kill -0 "$(head -n 1 "$pidfile")" 2>/dev/null
}

pg_up() {
  pg_install
  if pg_running; then
    log "postgres already running on 127.0.0.1:$PG_PORT"
  else
    log "starting postgres (pg0, PostgreSQL 18 + pgvector) on 127.0.0.1:$PG_PORT"
    (cd "$PG_HOME" && runuser -u "$PG_USER" -- "$(pg0_bin)" start --name "$PG_NAME" --port "$PG_PORT" \
      -c shared_buffers="${PG_SHARED_BUFFERS:-512MB}" -c work_mem=32MB -c maintenance_work_mem=512MB \
      -c max_connections=200 -c listen_addresses=127.0.0.1 >/dev/null) \
      || die "pg0 failed to start; see: runuser -u $PG_USER -- $(pg0_bin) logs --name $PG_NAME"
  fi
  for _ in $(seq 1 50); do
    if PGPASSWORD=postgres "$VENV/bin/python" - "$PG_PORT" "$PG_DB" <<'PY' 2>/dev/null; then break; fi
import sys, psycopg
port, db = sys.argv[1], sys.argv[2]
with psycopg.connect(host="127.0.0.1", port=port, user="postgres", password="postgres", dbname="postgres", autocommit=True) as c:
    if not c.execute("select 1 from pg_database where datname=%s", (db,)).fetchone():
        c.execute(f'create database "{db}"')
PY
    sleep 0.2
  done
  log "postgres ready: postgres://postgres:postgres@127.0.0.1:$PG_PORT/$PG_DB"
}

pg_down() {
  if pg_running; then
    (cd "$PG_HOME" && runuser -u "$PG_USER" -- "$(pg0_bin)" stop --name "$PG_NAME" >/dev/null)
    log "postgres stopped"
  else
    log "postgres not running"
  fi
}

redis_running() { redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG; }

# Ours: the server whose PID file is in this checkout's state directory (never another checkout's).
redis_ours() {
  [ -f "$SERVICES_DIR/redis/redis.pid" ] && kill -0 "$(cat "$SERVICES_DIR/redis/redis.pid")" 2>/dev/null
}

redis_up() {
  if ! command -v redis-server >/dev/null 2>&1; then
    log "installing redis-server from Debian"
    [ "$(id -u)" -eq 0 ] || die "redis-server is missing; install it (apt-get install redis-server) or set REDIS_URL."
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server) >/dev/null
  fi
  if redis_running; then
    redis_ours || die "port $REDIS_PORT answers as a Redis this checkout did not start; set REDIS_PORT in .env"
    log "redis already running on 127.0.0.1:$REDIS_PORT"
    return
  fi
  mkdir -p "$SERVICES_DIR/redis"
  redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --daemonize yes --save '' --appendonly no \
    --dir "$SERVICES_DIR/redis" --pidfile "$SERVICES_DIR/redis/redis.pid" \
    --logfile "$SERVICES_DIR/redis/redis.log"
  for _ in $(seq 1 50); do redis_running && break; sleep 0.1; done
  redis_running || die "redis did not start; see $SERVICES_DIR/redis/redis.log"
  log "redis ready: redis://127.0.0.1:$REDIS_PORT/0"
}

redis_down() {
  if redis_ours; then
    kill "$(cat "$SERVICES_DIR/redis/redis.pid")" 2>/dev/null || true
    for _ in $(seq 1 50); do redis_ours || break; sleep 0.1; done
    log "redis stopped"
  else log "redis not running"; fi
}

opensearch() { bash "$REPO/scripts/opensearch.sh" "$1"; }

status() {
  local rc=0
  if pg_running; then log "postgres: up (127.0.0.1:$PG_PORT)"; else log "postgres: down"; rc=1; fi
  if redis_running; then log "redis: up (127.0.0.1:$REDIS_PORT)"; else log "redis: down"; rc=1; fi
  if [ -f "$REPO/scripts/opensearch.sh" ]; then opensearch status || true; fi
  return $rc
}

cmd="${1:-up}"; which="${2:-all}"
case "$cmd:$which" in
  up:postgres) pg_up ;;
  up:redis) redis_up ;;
  up:opensearch) opensearch up ;;
  up:all) pg_up; redis_up; if [ -f "$REPO/scripts/opensearch.sh" ]; then opensearch up; fi ;;
  up:core) pg_up; redis_up ;;
  down:postgres) pg_down ;;
  down:redis) redis_down ;;
  down:core) redis_down; pg_down ;;
  down:opensearch) opensearch down ;;
  down:all) if [ -f "$REPO/scripts/opensearch.sh" ]; then opensearch down; fi; redis_down; pg_down ;;
  status:*) status ;;
  *) die "usage: $0 up|down|status [postgres|redis|opensearch|core|all]" ;;
esac
