"""Creates (or keeps) the admin superuser and prints its login."""

from __future__ import annotations

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

    def handle(self, *args: Any, username: str, password: str | None, reset_password: bool, **kw: Any) -> None:
        User = get_user_model()
        user, created = User.objects.get_or_create(
            username=username, defaults={"is_staff": True, "is_superuser": True, "email": f"{username}@localhost"}
        )
        if created or reset_password or password:
            password = password or secrets.token_urlsafe(12)
            user.set_password(password)
            user.is_staff = user.is_superuser = True
            user.save()
            self.stdout.write(f"admin login: {username} / {password}")
        else:
            self.stdout.write(
                f"admin login: {username} (password unchanged; `manage.py ensure_admin --reset-password` sets a new one)"
            )
