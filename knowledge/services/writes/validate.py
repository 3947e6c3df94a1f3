"""Validation of source documents against their connector's tenant, before anything is written."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ValidationError

from knowledge.access.principals import MAX_ACL_NAMES, connector_default_acl
from knowledge.connectors.types import SourceAcl, SourceDocument
from knowledge.errors import InvalidInput, KnowledgeError, PayloadTooLarge
from knowledge.json_values import json_problem
from knowledge.models import Connector, Document, Environment
from knowledge.store.lookups import supported_languages
from retrieval_backends.types import vector_problem


@dataclass(frozen=True)
class Resolved:
    """A validated source document with everything defaulted and resolved for its connector."""

    source: SourceDocument
    content_hash: str
    language: str
    environment_id: int | None
    acl: SourceAcl
    acl_origin: str

    @property
    def external_id(self) -> str:
        return self.source.external_id


def content_hash(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def text_search_languages() -> set[str]:
    """The languages documents may use (the backend's text-search configurations)."""
    return supported_languages()


@dataclass
class BatchContext:
    """What validating a batch needs to know about its connector, read once."""

    connector: Connector
    languages: set[str]
    environments: dict[str, Environment]
    default_acl: SourceAcl

    @classmethod
    def for_connector(cls, connector: Connector) -> BatchContext:
        return cls(
            connector=connector,
            languages=text_search_languages(),
            environments={e.slug: e for e in Environment.objects.filter(tenant_id=connector.tenant_id)},
            default_acl=connector_default_acl(connector=connector),
        )


def validate(context: BatchContext, source: SourceDocument) -> Resolved:
    """The resolved document; a KnowledgeError naming the field when it cannot be written."""
    _check_text(source)
    language = source.language or settings.KNOWLEDGE_DEFAULT_LANGUAGE
    if language not in context.languages:
        raise InvalidInput(f"unknown text-search language {language!r}", field="language")
    environment = _environment(context, source.environment)
    acl, origin = _acl(context, source.acl)
    if source.embedding is not None:
        _check_embedding(source)
    resolved = Resolved(source, content_hash(source.content), language, environment, acl, origin)
    _full_clean(context.connector, resolved)
    return resolved


def _check_text(source: SourceDocument) -> None:
    limit = settings.KNOWLEDGE_MAX_CONTENT_CHARS
    if len(source.content) > limit:
        raise PayloadTooLarge(
            f"content has {len(source.content)} characters; the limit is {limit}", field="content"
        )
    if not source.content:
        raise InvalidInput("content is empty", field="content")
    for name in ("external_id", "content", "title", "source_url"):
        if "\x00" in getattr(source, name):
            raise InvalidInput(
                "must not contain NUL characters", field=name if name != "external_id" else "id"
            )
    if not source.external_id:
        raise InvalidInput("a document needs a non-empty id", field="id")


def _environment(context: BatchContext, slug: str | None) -> int | None:
    if slug is None:
        return context.connector.environment_id
    environment = context.environments.get(slug)
    if environment is None:
        known = ", ".join(sorted(context.environments)) or "none"
        raise InvalidInput(f"unknown environment {slug!r} (known: {known})", field="environment")
    return environment.pk


def _acl(context: BatchContext, acl: SourceAcl | None) -> tuple[SourceAcl, str]:
    if acl is None:
        return context.default_acl, Document.AclOrigin.CONNECTOR
    for key, names in (("users", acl.users), ("groups", acl.groups)):
        if len(names) > MAX_ACL_NAMES:
            raise InvalidInput(
                f"at most {MAX_ACL_NAMES} {key} per document, got {len(names)}", field=f"acl.{key}"
            )
        if any(not name.strip() or len(name) > 320 for name in names):
            raise InvalidInput(f"{key} must be non-empty names of at most 320 characters", field=f"acl.{key}")
    if any("@" not in user for user in acl.users):
        raise InvalidInput("users must be e-mail addresses", field="acl.users")
    origin = Document.AclOrigin.REQUEST if not context.connector.pulls else Document.AclOrigin.SOURCE
    return SourceAcl.of(public=acl.public, users=acl.users, groups=acl.groups), origin


def _check_embedding(source: SourceDocument) -> None:
    assert source.embedding is not None
    problem = vector_problem(source.embedding)
    if problem:
        raise InvalidInput(problem, field="embedding")
    limit = settings.KNOWLEDGE_MAX_CLIENT_CHUNK_CHARS
    size = len(source.title) + 1 + len(source.content)
    if size > limit:
        raise PayloadTooLarge(
            f"a document with a caller-supplied embedding is stored as one chunk, which holds at most "
            f"{limit} characters (title + content); this one has {size}: split it, or omit the embedding "
            f"to have it chunked and embedded here",
            field="content",
        )


def _full_clean(connector: Connector, resolved: Resolved) -> None:
    """Django's field validation (lengths, formats) of the row that will be written."""
    source = resolved.source
    if not isinstance(source.metadata, dict):
        raise InvalidInput("metadata must be a JSON object", field="metadata")
    problem = json_problem(source.metadata)  # before Django serialises it (recursively)
    if problem:
        raise InvalidInput(problem, field="metadata")
    row = Document(
        tenant_id=connector.tenant_id,
        connector=connector,
        external_id=source.external_id,
        title=source.title,
        source_url=source.source_url,
        content=source.content,
        content_hash=resolved.content_hash,
        metadata=source.metadata,
        language=resolved.language,
        environment_id=resolved.environment_id,
    )
    try:
        row.clean_fields(exclude=["environment", "connector", "tenant"])
    except ValidationError as exc:
        name, messages = next(iter(exc.message_dict.items()))
        raise InvalidInput(messages[0], field="id" if name == "external_id" else name) from None


def validate_batch(
    context: BatchContext, sources: Sequence[SourceDocument]
) -> tuple[list[Resolved], list[tuple[str, KnowledgeError]]]:
    """The valid documents and, for each invalid one, its id and error."""
    valid, errors = [], []
    for source in sources:
        try:
            valid.append(validate(context, source))
        except KnowledgeError as exc:
            errors.append((source.external_id, exc))
    return valid, errors
