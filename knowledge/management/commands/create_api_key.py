"""Issues an API key for a tenant and prints it once (only its hash is stored)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from knowledge import names
from knowledge.models import ApiKey, Principal, Tenant


class Command(BaseCommand):
    help = "Create an API key; the key is printed once on stdout."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True, help="tenant slug (the API's source_account_id)")
        parser.add_argument("--name", default="cli", help="a label for the key")
        parser.add_argument("--scopes", default="search", help="comma-separated: search,index")
        parser.add_argument(
            "--principal", default=None, help="e-mail of an existing user every search acts as"
        )
        parser.add_argument(
            "--create-principal", action="store_true", help="create the --principal user if it is missing"
        )
        parser.add_argument("--on-behalf-of", action="store_true", help="may search on behalf of named users")
        parser.add_argument("--bypass-acl", action="store_true", help="may ask to ignore document ACLs")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = Tenant.objects.filter(slug=options["tenant"]).first()
        if tenant is None:
            raise CommandError(f"unknown tenant {options['tenant']!r}")
        scopes = sorted({s.strip() for s in options["scopes"].split(",") if s.strip()})
        unknown = set(scopes) - set(ApiKey.Scope.values)
        if unknown or not scopes:
            raise CommandError(
                f"scopes must be among {', '.join(ApiKey.Scope.values)}; got {options['scopes']!r}"
            )
        principal = self._principal(tenant, options["principal"], create=options["create_principal"])
        _, plain = ApiKey.issue(
            tenant=tenant,
            name=options["name"],
            scopes=scopes,
            principal=principal,
            on_behalf_of=options["on_behalf_of"],
            bypass_acl=options["bypass_acl"],
        )
        self.stdout.write(plain)

    def _principal(self, tenant: Tenant, given: str | None, *, create: bool) -> Principal | None:
        """The named user (matched by canonical e-mail); a missing one is an error unless `create`."""
        if given is None:
            if create:
                raise CommandError("--create-principal needs --principal")
            return None
        email = names.user_id(given)
        if "@" not in email:
            raise CommandError(f"--principal must be a user's e-mail address; got {given!r}")
        found = Principal.objects.filter(tenant=tenant, kind=Principal.Kind.USER, external_id=email).first()
        if found is not None:
            return found
        if not create:
            groups = Principal.objects.filter(
                tenant=tenant, kind=Principal.Kind.GROUP, external_id=given.strip()
            )
            hint = " (that is a group; a key acts as one user)" if groups.exists() else ""
            raise CommandError(
                f"tenant {tenant.slug!r} has no user {email!r}{hint}; pass --create-principal to create it"
            )
        return Principal.objects.create(tenant=tenant, kind=Principal.Kind.USER, external_id=email)
