# The README's two commands are `make run` and `make test`; the rest are their steps.
.PHONY: install services migrate run test lint stop

install:
	scripts/bootstrap.sh

services: install
	scripts/services.sh up

migrate: install
	scripts/services.sh up core
	.venv/bin/python manage.py migrate --no-input -v 0

run:
	scripts/run.sh

lint: install
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/mypy .

test: services
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/python manage.py makemigrations --check --dry-run
	.venv/bin/mypy .
	.venv/bin/python manage.py migrate --no-input -v 0
	KNOWLEDGE_EMBEDDER=hashing .venv/bin/python manage.py evals retrieval --baseline tests/fixtures/retrieval/baseline.json
	OPENSEARCH_REQUIRED=1 .venv/bin/pytest

stop:
	-[ -f .services/celery/worker.pid ] && kill $$(cat .services/celery/worker.pid)
	scripts/services.sh down
