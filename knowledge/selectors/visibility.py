"""Who can see a document, and why a given user cannot: the search filters, explained to a person."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from django.db.models import Prefetch

from knowledge.access.principals import acl_tokens, document_acl_tokens
from knowledge.models import Document, Environment, Principal
from knowledge.selectors.identity import principal_tokens
from retrieval_backends.types import PUBLIC_TOKEN, principal_ids_of


@dataclass(frozen=True)
class GroupAudience:
    """An allowed group and the users in it (their searches carry the group's token)."""

    group: Principal
    members: list[Principal]


@dataclass(frozen=True)
class Audience:
    """The principals whose tokens match the document's ACL tokens."""

    everyone: bool  # public: every user of the tenant, and public-only searches
    users: list[Principal]
    groups: list[GroupAudience]


def document_audience(*, document: Document) -> Audience:
    """Users allowed directly, allowed groups with their members, and whether everyone may see it."""
    members = Prefetch(
        "members", queryset=Principal.objects.filter(kind=Principal.Kind.USER).order_by("external_id")
    )
    allowed = list(document.allowed_principals.order_by("kind", "external_id").prefetch_related(members))
    return Audience(
        everyone=document.is_public,
        users=[p for p in allowed if p.kind == Principal.Kind.USER],
        groups=[
            GroupAudience(group=p, members=list(p.members.all()))
            for p in allowed
            if p.kind == Principal.Kind.GROUP
        ],
    )


@dataclass(frozen=True)
class HiddenReason:
    """Why a search by the user leaves the document out; `code` is stable, `message` is for people."""

    code: str
    message: str


@dataclass(frozen=True)
class VisibilityQuestion:
    """The document, the user asking (None: someone with no principal, public only) and the environment."""

    document: Document
    user: Principal | None
    environment: Environment | None
    user_tokens: frozenset[str]
    document_tokens: frozenset[str]
    labels: dict[str, str] = field(default_factory=dict)  # token -> "u:5 (hana@example.com)"

    def describe(self, tokens: frozenset[str]) -> str:
        return ", ".join(self.labels.get(t, t) for t in sorted(tokens)) or "nobody"


@dataclass(frozen=True)
class Visibility:
    """The answer: visible when no check gives a reason; `matching_tokens` are the ACL tokens in common."""

    question: VisibilityQuestion
    reasons: list[HiddenReason]
    matching_tokens: list[str]

    @property
    def visible(self) -> bool:
        return not self.reasons


def _tenant(q: VisibilityQuestion) -> HiddenReason | None:
    if q.user is None or q.user.tenant_id == q.document.tenant_id:
        return None
    return HiddenReason(
        "tenant",
        f"{q.user.external_id} belongs to tenant {q.user.tenant.slug!r}, the document to "
        f"{q.document.tenant.slug!r}; searches never cross tenants",
    )


KEPT = "kept by the document's source id, so it holds when the source drops the document and brings it back"


def _deleted(q: VisibilityQuestion) -> HiddenReason | None:
    document = q.document
    if document.deleted_at is None:
        return None
    when = f"{document.deleted_at:%Y-%m-%d %H:%M} UTC"
    if document.deletion_origin == Document.DeletionOrigin.ADMIN:
        return HiddenReason(
            "deleted", f"an admin soft-deleted the document at {when}; the decision is {KEPT}"
        )
    return HiddenReason("deleted", f"the document was soft-deleted at {when}")


def _environment(q: VisibilityQuestion) -> HiddenReason | None:
    env = q.document.environment
    if q.environment is None or env is None or env.pk == q.environment.pk:
        return None
    return HiddenReason(
        "environment",
        f"the document belongs to environment {env.slug!r}; a search in {q.environment.slug!r} sees only "
        "that environment's documents and those without one",
    )


def _acl(q: VisibilityQuestion) -> HiddenReason | None:
    if q.user_tokens & q.document_tokens:
        return None
    who = q.user.external_id if q.user else "a search with no user"
    return HiddenReason(
        "acl",
        f"no matching ACL token: {who} carries {q.describe(q.user_tokens)}; the document allows "
        f"{q.describe(q.document_tokens)}",
    )


def _override(q: VisibilityQuestion) -> HiddenReason | None:
    document = q.document
    if not document.acl_overridden or q.user_tokens & q.document_tokens:
        return None
    source = frozenset(
        acl_tokens(is_public=document.source_is_public, principals=document.source_principals.all())
    )
    if not q.user_tokens & source:
        return None
    return HiddenReason(
        "override",
        f"an admin override ({document.acl_override_by or 'admin'}, "
        f"{document.acl_override_at:%Y-%m-%d %H:%M} UTC) replaced the source's ACL, which would allow "
        f"{q.describe(q.user_tokens & source)}; the override is {KEPT}",
    )


# Each check says why a search leaves the document out, or None. A new rule is one more function here.
VISIBILITY_CHECKS: tuple[Callable[[VisibilityQuestion], HiddenReason | None], ...] = (
    _tenant,
    _deleted,
    _environment,
    _acl,
    _override,
)


def _token_labels(tokens: frozenset[str]) -> dict[str, str]:
    """`u:5` -> `u:5 (hana@example.com)`, `g:1` -> `g:1 (group engineering)`."""
    ids = principal_ids_of(tokens)
    return {
        p.acl_token: f"{p.acl_token} ({'group ' if p.kind == Principal.Kind.GROUP else ''}{p.external_id})"
        for p in Principal.objects.filter(pk__in=ids)
    }


def document_visibility(
    *, document: Document, user: Principal | None, environment: Environment | None = None
) -> Visibility:
    """Whether a search by `user` (in `environment`, or every environment) can return the document."""
    if user is not None and user.kind != Principal.Kind.USER:
        raise ValueError(f"{user} is a group; searches are made by users")
    tokens = (
        principal_tokens(tenant=user.tenant, user_external_id=user.external_id)
        if user is not None
        else frozenset({PUBLIC_TOKEN})
    )
    document_tokens = frozenset(document_acl_tokens(document=document))
    question = VisibilityQuestion(
        document=document,
        user=user,
        environment=environment,
        user_tokens=tokens,
        document_tokens=document_tokens,
        labels=_token_labels(tokens | document_tokens),
    )
    reasons = [reason for check in VISIBILITY_CHECKS if (reason := check(question)) is not None]
    return Visibility(question, reasons, sorted(tokens & question.document_tokens))
