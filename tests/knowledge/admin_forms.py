"""Posting Django admin forms the way a browser does (the real ModelAdmin save paths)."""

from __future__ import annotations

import json

from django.test import Client
from django.urls import reverse

from knowledge.models import Document, DocumentPolicy

INLINE = {
    "chunks-TOTAL_FORMS": "0",
    "chunks-INITIAL_FORMS": "0",
    "chunks-MIN_NUM_FORMS": "0",
    "chunks-MAX_NUM_FORMS": "1000",
}
CONTENT = ("title", "source_url", "content", "metadata", "language", "environment")


def document_form(document: Document, **changes: object) -> dict[str, object]:
    """The change form of a document as the admin renders it, with `changes` applied."""
    data: dict[str, object] = {
        "title": document.title,
        "source_url": document.source_url,
        "content": document.content,
        "metadata": json.dumps(document.metadata),
        "language": document.language,
        "environment": document.environment_id or "",
        "allowed_principals": [p.pk for p in document.allowed_principals.all()],
        **INLINE,
    }
    public = changes.pop("is_public", document.is_public)
    data.update(changes)
    if public:
        data["is_public"] = "on"
    if document.connector.pulls:  # read-only there: the form has no such inputs
        for name in CONTENT:
            data.pop(name, None)
    return data


def post_document_change(client: Client, document: Document, **changes: object) -> None:
    url = reverse("admin:knowledge_document_change", args=[document.pk])
    response = client.post(url, document_form(document, **changes))
    assert response.status_code == 302, response.content.decode()[:3000]


def post_document_action(client: Client, action: str, document: Document) -> None:
    url = reverse("admin:knowledge_document_changelist")
    data: dict[str, object] = {"action": action, "_selected_action": [document.pk]}
    if action == "delete_selected":
        data["post"] = "yes"
    response = client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:3000]


def post_policy_action(client: Client, action: str, policy: DocumentPolicy) -> None:
    """An action of the document policies' list (clear an override or a deletion kept by source id)."""
    url = reverse("admin:knowledge_documentpolicy_changelist")
    response = client.post(url, {"action": action, "_selected_action": [policy.pk]})
    assert response.status_code == 302, response.content.decode()[:3000]
