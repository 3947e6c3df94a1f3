"""Management commands of the knowledge app."""
