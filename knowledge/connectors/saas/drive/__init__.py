"""The Google Drive connector kind: files, their permissions, Google groups, and the changes feed."""

from knowledge.connectors.saas.drive.kind import DriveKind

__all__ = ["DriveKind"]
