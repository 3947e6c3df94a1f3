# The README's two commands are `make run` and `make test`; the rest are their steps.
.PHONY: install browser services migrate run test lint stop

install:
	scripts/bootstrap.sh

browser: install
	scripts/bootstrap.sh --with-browser

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
	.venv/bin/lint-imports

# The fixture evals run inside pytest's test database (tests/evals/test_command.py checks the baseline),
# never in the serving database of DATABASE_URL.
test: services browser
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/python manage.py makemigrations --check --dry-run
	.venv/bin/mypy .
	.venv/bin/lint-imports
	.venv/bin/python manage.py migrate --no-input -v 0
	OPENSEARCH_REQUIRED=1 BROWSER_REQUIRED=1 .venv/bin/pytest

stop:
	-for name in worker priority bulk; do [ -f .services/celery/$$name.pid ] && kill $$(cat .services/celery/$$name.pid); done
	scripts/services.sh down
