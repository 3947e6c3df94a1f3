"""Creates (or keeps) the admin superuser and prints its login."""

from __future__ import annotations

import os
import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Create the admin superuser if missing; print the login (the password only when it is set now)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default="admin")
        parser.add_argument("--password", default=None, help="default: a random one, printed once")
        parser.add_argument("--reset-password", action="store_true")
        parser.add_argument(
            "--password-file",
            default=None,
            help="remember a generated password here (mode 600) so re-runs can print the login again",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        username, password = options["username"], options["password"]
        user, created = get_user_model().objects.get_or_create(
            username=username,
            defaults={"is_staff": True, "is_superuser": True, "email": f"{username}@localhost"},
        )
        remembered = _read(options["password_file"])
        if not password and remembered and user.check_password(remembered):
            self.stdout.write(f"admin login: {username} / {remembered}")
            return
        if created or options["reset_password"] or password:
            password = password or secrets.token_urlsafe(12)
            _write(options["password_file"], password)
            user.set_password(password)
            user.is_staff = user.is_superuser = True
            user.save()
            self.stdout.write(f"admin login: {username} / {password}")
        else:
            self.stdout.write(
                f"admin login: {username} (password unchanged; "
                "`manage.py ensure_admin --reset-password` sets a new one)"
            )


def _read(path: str | None) -> str | None:
    if not path or not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as handle:
        return handle.read().strip() or None


def _write(path: str | None, password: str) -> None:
    if not path:
        return
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(password)
