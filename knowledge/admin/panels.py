"""The "Who can see this?" panel of the document admin page: parses its GET fields, asks the selector."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from knowledge import names
from knowledge.models import Document, Environment, Principal
from knowledge.selectors.visibility import document_audience, document_visibility

USER_FIELD, ENVIRONMENT_FIELD = "visible_to", "visible_in"
MAX_SUGGESTIONS = 500


def _user(document: Document, external_id: str) -> Principal | None:
    """The document tenant's user of that e-mail, else another tenant's (to say why), else None."""
    canonical = names.user_id(external_id)
    users = Principal.objects.filter(kind=Principal.Kind.USER, external_id=canonical).select_related("tenant")
    return users.filter(tenant_id=document.tenant_id).first() or users.order_by("tenant__slug").first()


def visibility_panel_context(*, request: HttpRequest, object_id: str) -> dict[str, Any]:
    """Context of the panel; empty for a document that does not exist (the admin answers that)."""
    document = (
        Document.objects.select_related("tenant", "environment").filter(pk=object_id).first()
        if object_id.isascii() and object_id.isdigit()
        else None
    )
    if document is None:
        return {}
    environments = Environment.objects.filter(tenant_id=document.tenant_id).order_by("slug")
    asked, env_slug = request.GET.get(USER_FIELD, "").strip(), request.GET.get(ENVIRONMENT_FIELD, "").strip()
    environment = environments.filter(slug=env_slug).first() if env_slug else None
    panel: dict[str, Any] = {
        "audience": document_audience(document=document),
        "environments": environments,
        "suggestions": Principal.objects.filter(tenant_id=document.tenant_id, kind=Principal.Kind.USER)
        .order_by("external_id")
        .values_list("external_id", flat=True)[:MAX_SUGGESTIONS],
        "asked": asked,
        "environment": environment,
        "fields": {"user": USER_FIELD, "environment": ENVIRONMENT_FIELD},
    }
    if env_slug and environment is None:
        panel["problem"] = f"unknown environment {env_slug!r} in tenant {document.tenant.slug!r}"
    elif asked:
        user = _user(document, asked)
        panel["user"] = user
        panel["verdict"] = document_visibility(document=document, user=user, environment=environment)
    return {"visibility": panel}
