# Sourced by the other scripts: this checkout's own service names, ports and state directory, so two
# clones on one machine never share a PostgreSQL instance, a Redis, an OpenSearch node or a PID file.
#
# Derived from the checkout's real path: a block of 20 ports at 21000 + (cksum(path) % 500) * 20, below
# Linux's ephemeral range (32768-60999):
#   +0 PostgreSQL (pg0 instance kb-<hash>), +1 Redis, +2/+3 OpenSearch HTTP (node-1/node-2),
#   +10.. OpenSearch transport.
# Any of PG_PORT, PG_INSTANCE, REDIS_PORT, OPENSEARCH_PORT, OPENSEARCH_TRANSPORT_PORT set in the
# environment or in .env wins. The result is written to .services/checkout.env, which Django reads
# after .env (config/env.py): DATABASE_URL, REDIS_URL and OPENSEARCH_URL for this checkout.

CHECKOUT_REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
SERVICES_DIR="${SERVICES_DIR:-$CHECKOUT_REPO/.services}"

_checkout_from_dotenv() {  # the value of KEY in .env, if any
  if [ -f "$CHECKOUT_REPO/.env" ]; then sed -n "s/^$1=//p" "$CHECKOUT_REPO/.env" | tail -n 1; fi
}
for _name in PG_PORT PG_INSTANCE REDIS_PORT OPENSEARCH_PORT OPENSEARCH_TRANSPORT_PORT; do
  if [ -z "${!_name:-}" ]; then
    _value="$(_checkout_from_dotenv "$_name")"
    if [ -n "$_value" ]; then export "$_name=$_value"; fi
  fi
done
CHECKOUT_KEY="$(printf %s "$CHECKOUT_REPO" | cksum | cut -d' ' -f1)"
CHECKOUT_BLOCK=$((21000 + (CHECKOUT_KEY % 500) * 20))
export PG_PORT="${PG_PORT:-$CHECKOUT_BLOCK}"
export PG_INSTANCE="${PG_INSTANCE:-kb-$(printf %08x "$CHECKOUT_KEY")}"
export REDIS_PORT="${REDIS_PORT:-$((CHECKOUT_BLOCK + 1))}"
export OPENSEARCH_PORT="${OPENSEARCH_PORT:-$((CHECKOUT_BLOCK + 2))}"
export OPENSEARCH_TRANSPORT_PORT="${OPENSEARCH_TRANSPORT_PORT:-$((CHECKOUT_BLOCK + 10))}"
export SERVICES_DIR

checkout_write_env() {
  mkdir -p "$SERVICES_DIR"
  cat > "$SERVICES_DIR/checkout.env.tmp" <<ENV
# Written by scripts/checkout.sh for $CHECKOUT_REPO; .env and the environment win over it.
DATABASE_URL=postgres://postgres:postgres@127.0.0.1:$PG_PORT/knowledge
REDIS_URL=redis://127.0.0.1:$REDIS_PORT/0
OPENSEARCH_URL=http://127.0.0.1:$OPENSEARCH_PORT
ENV
  mv "$SERVICES_DIR/checkout.env.tmp" "$SERVICES_DIR/checkout.env"
}
checkout_write_env
