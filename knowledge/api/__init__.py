"""The REST API for applications (under /api/v1/)."""
