"""The connector-kind contract: one class per kind validates its config and lists its source."""

from __future__ import annotations

from typing import Any, ClassVar

from knowledge.connectors.types import Listing, SourceState


class ConnectorKind:
    """A kind of source (api push, filesystem folder, web pages), registered by `name`.

    Subclasses state their config keys and validate them; pull kinds implement `list_source`.
    """

    name: ClassVar[str] = ""
    label: ClassVar[str] = ""
    #: Pull kinds are synced by workers; push kinds (the API) are written to by clients only.
    pulls: ClassVar[bool] = True
    #: Config keys this kind accepts.
    config_keys: ClassVar[frozenset[str]] = frozenset()
    #: What the connector's credential is (a token, ...), for the admin form; "" for kinds without one.
    #: The credential is stored encrypted, apart from `config`, and handed to `list_source`.
    credential_label: ClassVar[str] = ""
    #: Kinds that can re-read permissions (and groups) without content implement `list_permissions`.
    syncs_permissions: ClassVar[bool] = False

    def validate_config(self, config: dict[str, Any]) -> dict[str, str]:
        """Problems with `config`, by key (empty when it is valid). Unknown keys are reported too."""
        unknown = sorted(set(config) - self.config_keys)
        errors = self.check(config)
        if unknown:
            errors.setdefault("config", f"unknown keys for a {self.name} connector: {unknown}")
        return errors

    def check(self, config: dict[str, Any]) -> dict[str, str]:
        """Kind-specific validation of the known keys."""
        return {}

    def list_source(
        self, config: dict[str, Any], state: SourceState | None = None, *, credential: str = ""
    ) -> Listing:
        """Fetch every document the source has now.

        `state` reads back what earlier syncs stored (the web kind keeps HTTP validators in a
        document's metadata and reports a `304 Not Modified` page as `kept`); without it, everything
        is fetched in full. Never raises for a problem with one item (it goes into `Listing.errors`
        and `kept`); a problem that makes the listing incomplete calls `Listing.fail_listing`, so
        nothing is pruned.
        """
        raise NotImplementedError(f"the {self.name!r} connector kind does not pull documents")

    def list_permissions(
        self, config: dict[str, Any], state: SourceState, *, credential: str = ""
    ) -> Listing:
        """The current ACL (`Listing.acls`) of each of `state`'s documents, and the groups they name,
        read without fetching content; `Listing.private` for documents whose ACL could not be read."""
        raise NotImplementedError(f"the {self.name!r} connector kind has no permission-only sync")
