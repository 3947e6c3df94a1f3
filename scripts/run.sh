#!/usr/bin/env bash
# `make run`: set up everything, load the demo, start a Celery worker and the server (gunicorn;
# RUN_DEV_SERVER=1 for Django's auto-reloading development server instead).
# Safe to re-run: services, migrations, the admin user and the demo data are all idempotent.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
START=$(date +%s)
scripts/bootstrap.sh
scripts/services.sh up core
PY=.venv/bin/python
# The OpenSearch backend on this checkout's local node (an OPENSEARCH_URL elsewhere is the operator's cluster).
source scripts/checkout.sh
BACKEND="${KNOWLEDGE_RETRIEVAL_BACKEND:-$(sed -n 's/^KNOWLEDGE_RETRIEVAL_BACKEND=//p' .env 2>/dev/null | tail -n 1)}"
OS_URL="${OPENSEARCH_URL:-$(sed -n 's/^OPENSEARCH_URL=//p' .env 2>/dev/null | tail -n 1)}"
LOCAL_OS="http://127.0.0.1:$OPENSEARCH_PORT"
if [ "${BACKEND:-postgres}" = "opensearch" ] && [ "${OS_URL:-$LOCAL_OS}" = "$LOCAL_OS" ]; then
  scripts/services.sh up opensearch
fi
$PY manage.py migrate --no-input -v 0
$PY manage.py collectstatic --no-input -v 0
$PY manage.py prepare_embedder >/dev/null
DEMO="$($PY manage.py seed_demo --api-key-file .services/demo-api-key)"
echo "$DEMO" | grep -v "API key"
KEY="$(echo "$DEMO" | sed -n 's/^demo API key (tenant primary): //p')"
LOGIN="$($PY manage.py ensure_admin --password-file .services/admin-password)"
$PY manage.py index_sync >/dev/null || echo "warning: the index is not in sync yet (see manage.py index_sync --status)"

mkdir -p .services/celery
# Two workers: "priority" (index pushes, ACL changes, deletions, the reconciler; runs beat) and "bulk"
# (connector syncs, ingest jobs), so bulk work never holds the slot an ACL change needs.
for name in worker priority bulk; do  # "worker": the single worker of older checkouts
  pidfile=".services/celery/$name.pid"
  if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    kill "$(cat "$pidfile")" || true
    for _ in $(seq 1 50); do kill -0 "$(cat "$pidfile" 2>/dev/null)" 2>/dev/null || break; sleep 0.2; done
  fi
done
.venv/bin/celery -A config worker -Q priority -n "priority@%h" --concurrency=1 \
  --beat --schedule .services/celery/beat-schedule --loglevel=INFO \
  --pidfile=.services/celery/priority.pid --logfile=.services/celery/priority.log --detach
.venv/bin/celery -A config worker -Q bulk -n "bulk@%h" --concurrency=1 --loglevel=INFO \
  --pidfile=.services/celery/bulk.pid --logfile=.services/celery/bulk.log --detach

HOST="${RUN_HOST:-127.0.0.1}"; PORT="${RUN_PORT:-8000}"
cat <<MSG

  Knowledge base is up (set-up took $(( $(date +%s) - START )) s).
    Admin:          http://$HOST:$PORT/admin/
    $LOGIN
    Playground:     http://$HOST:$PORT/playground/   (search as any user, see who can see a hit)
    Eval reports:   http://$HOST:$PORT/evals/
    API docs:       http://$HOST:$PORT/api/docs/   (schema: /api/schema/, health: /api/v1/health)
    Demo API key:   $KEY
    Try it:         curl -s -X POST http://$HOST:$PORT/api/v1/search -H "Authorization: Bearer $KEY" \\
                      -H 'Content-Type: application/json' \\
                      -d '{"query": "how much time off do we get?", "on_behalf_of": "erin@example.com"}'
    Celery workers: priority and bulk queues, logs in .services/celery/{priority,bulk}.log
  Stop the server with Ctrl-C; \`make stop\` also stops the worker and the services.

MSG
if [ "${RUN_DEV_SERVER:-0}" = 1 ]; then
  exec $PY manage.py runserver "$HOST:$PORT"
fi
exec .venv/bin/gunicorn --config config/gunicorn.conf.py
