"""Value types a source produces: documents, their ACLs, and a listing's outcome (no Django imports)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from knowledge import names


@dataclass(frozen=True)
class SourceAcl:
    """Who may see a document, by name: user e-mails and group names of the connector's tenant."""

    public: bool = False
    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()

    @classmethod
    def of(cls, *, public: bool = False, users: Iterable[str] = (), groups: Iterable[str] = ()) -> SourceAcl:
        """An ACL with canonical (knowledge.names), sorted, de-duplicated names, so equal ACLs compare
        equal; a name that is blank once normalised names nobody and is dropped."""
        canonical_users = {u for u in map(names.user_id, users) if u}
        canonical_groups = {g for g in map(names.group_name, groups) if g}
        return cls(
            public=bool(public), users=tuple(sorted(canonical_users)), groups=tuple(sorted(canonical_groups))
        )


@dataclass(frozen=True)
class SourceDocument:
    """One document as a connector, a loader or an API request produced it.

    `acl=None` means "the source says nothing": the connector's default ACL applies. `environment` is
    an environment slug of the connector's tenant (None: the connector's environment). `language` is a
    PostgreSQL text-search configuration (None: the default language). `embedding`, when given, is the
    caller's vector for the whole document, which is then stored as one chunk.
    """

    external_id: str
    content: str
    title: str = ""
    source_url: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    language: str | None = None
    environment: str | None = None
    acl: SourceAcl | None = None
    source_updated_at: datetime | None = None
    embedding: tuple[float, ...] | None = None


@dataclass(frozen=True)
class SourceError:
    """A problem with one item of a source (`external_id` set) or with the listing itself."""

    message: str
    external_id: str | None = None


@dataclass(frozen=True)
class SourceGroup:
    """A group as the source defines it: its scoped name (`<kind>:<source>/<group>`, so two sources'
    groups never share a principal) and its members' e-mails. `complete` is False when the member list
    could not be read in full (a failed page, a paging cap): documents naming the group then become
    private instead of trusting a partial, possibly stale, membership."""

    name: str
    members: tuple[str, ...] = ()
    complete: bool = True


@dataclass
class Listing:
    """What a pull connector found.

    `documents` are fetched and ready to write. `kept` are ids the source still has but that could not
    be read this time (a fetch failure, an oversized file): they are left as they are, never deleted.
    `private` are ids whose ACL source is unusable (a broken ACL file): whether written or kept, they
    must end up visible to nobody. `complete` is False when the listing itself may have missed items;
    then nothing is pruned.
    """

    documents: list[SourceDocument] = field(default_factory=list)
    kept: set[str] = field(default_factory=set)
    private: set[str] = field(default_factory=set)
    errors: list[SourceError] = field(default_factory=list)
    complete: bool = True
    #: Current ACLs of items the source still has but that were not fetched (unchanged since the
    #: last sync): their content is kept, their ACL is updated.
    acls: dict[str, SourceAcl] = field(default_factory=dict)
    #: The source's groups that documents' ACLs name, each with its members as the source has them
    #: now (authoritative: members not listed are removed from the group).
    groups: list[SourceGroup] = field(default_factory=list)
    #: Where the source's change feed stands now (a Drive start page token): stored only when the
    #: listing is complete, and handed back as `SourceState.cursor()` to the next sync.
    cursor: str | None = None

    def fail_item(self, external_id: str, message: str) -> None:
        """An item the source has but that could not be read now: an error, and kept as it is."""
        self.kept.add(external_id)
        self.item_error(external_id, message)

    def skip_item(self, external_id: str, message: str) -> None:
        """An item the sync must not read (outside the source boundary): an error, and not kept, so a
        document indexed from it earlier is removed."""
        self.item_error(external_id, message)

    def make_private(self, external_id: str, message: str) -> None:
        """An item whose ACL cannot be read: an error, and visible to nobody (fail closed)."""
        self.private.add(external_id)
        self.item_error(external_id, message)

    def item_error(self, external_id: str, message: str) -> None:
        self.errors.append(SourceError(message=f"{external_id}: {message}", external_id=external_id))

    def fail_listing(self, message: str) -> None:
        self.complete = False
        self.errors.append(SourceError(message=message))

    def all_private(self, external_ids: Iterable[str]) -> None:
        """Who may read these stored items is unknown: each becomes visible to nobody, content kept."""
        ids = set(external_ids)
        self.private.update(ids)
        self.acls.update(dict.fromkeys(ids, SourceAcl()))

    def fail_unreadable(self, message: str, state: SourceState | None) -> None:
        """Who may read what is unknown: an error, nothing pruned, everything stored private."""
        self.fail_listing(message)
        self.cursor = None
        if state is not None:
            self.all_private(state.external_ids())

    def keep_with_acl(self, external_id: str, acl: SourceAcl) -> None:
        """An unchanged item: its stored content stays, its ACL becomes `acl`."""
        self.kept.add(external_id)
        self.acls[external_id] = acl

    @property
    def seen(self) -> set[str]:
        """Every id the source still has (fetched or kept)."""
        return {d.external_id for d in self.documents} | self.kept

    @property
    def partial_groups(self) -> set[str]:
        """Groups whose member lists are incomplete: whatever names them must become private."""
        return {g.name for g in self.groups if not g.complete}


class SourceState(Protocol):
    """What a pull kind may read back of its connector's earlier syncs (validators, links, ...)."""

    def metadata(self, external_id: str) -> Mapping[str, Any] | None:
        """The stored `metadata` of the live document with this id; None when there is none."""

    def external_ids(self) -> set[str]:
        """The ids of the connector's documents that syncs follow: live ones, and those an admin
        deleted (their source ACL is kept current)."""

    def cursor(self) -> str:
        """The change-feed position the last complete sync stored ("" on a first or full sync)."""

    def groups(self, prefix: str) -> set[str]:
        """The names of the tenant's groups starting with `prefix` (what earlier syncs wrote)."""
