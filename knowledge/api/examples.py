"""OpenAPI examples of the API's requests and responses."""

from drf_spectacular.utils import OpenApiExample

SEARCH = [
    OpenApiExample(
        "Text query on behalf of a user",
        value={"query": "how many vacation days do I get?", "top_k": 5, "on_behalf_of": "erin@example.com"},
        request_only=True,
    ),
    OpenApiExample(
        "Own vector, one environment, with explanation",
        value={"embedding": [0.01, -0.02, 0.03], "environment": "production", "explain": True},
        request_only=True,
    ),
    OpenApiExample(
        "Results",
        value={
            "results": [
                {
                    "id": 42,
                    "document_id": "handbook/vacation",
                    "chunk_index": 0,
                    "source_account_id": "primary",
                    "title": "Vacation policy",
                    "content": "Vacation policy\nEmployees get 25 days of paid vacation per year.",
                    "source_url": "https://intranet.example.com/handbook/vacation",
                    "score": 1.84,
                    "rrf_score": 1.84,
                    "similarity": 0.71,
                    "text_rank": 0.12,
                }
            ],
            "count": 1,
            "warnings": [],
        },
        response_only=True,
    ),
]

INDEX = [
    OpenApiExample(
        "A document for one group, in production",
        value={
            "id": "eng/oncall",
            "title": "On-call runbook",
            "content": "# On-call\nThe on-call engineer answers pages within 15 minutes.",
            "source_url": "https://wiki.example.com/oncall",
            "acl": {"public": False, "users": [], "groups": ["engineering"]},
            "environment": "production",
            "metadata": {"owner": "platform"},
        },
        request_only=True,
    ),
    OpenApiExample("Indexed", value={"status": "indexed"}, response_only=True, status_codes=["201"]),
]

INDEX_UNCHANGED = OpenApiExample(
    "Unchanged", value={"status": "unchanged"}, response_only=True, status_codes=["200"]
)

BAD_INPUT = OpenApiExample(
    "Bad input",
    value={
        "error": "invalid_input",
        "message": "top_k: Ensure this value is less than or equal to 100.",
        "fields": {"top_k": ["Ensure this value is less than or equal to 100."]},
    },
    response_only=True,
    status_codes=["400"],
)

WRONG_DIMENSION = OpenApiExample(
    "Vector of an unindexed dimension",
    value={
        "error": "invalid_input",
        "message": "the query vector has 3 dimensions, but the indexed vectors have 384, 1536",
        "fields": {
            "embedding": ["the query vector has 3 dimensions, but the indexed vectors have 384, 1536"]
        },
    },
    response_only=True,
    status_codes=["400"],
)

DOCUMENT_VALUE = {
    "id": "eng/oncall",
    "connector_id": 1,
    "source_account_id": "primary",
    "title": "On-call runbook",
    "source_url": "https://wiki.example.com/oncall",
    "content_hash": "9f2c0d4c1e3b6a7d8e9f00112233445566778899aabbccddeeff001122334455",
    "metadata": {"owner": "platform"},
    "language": "english",
    "environment": "production",
    "acl": {"public": False, "users": [], "groups": ["engineering"]},
    "chunk_count": 1,
    "deleted_at": None,
    "created_at": "2025-01-31T09:00:00Z",
    "updated_at": "2025-01-31T09:00:00Z",
}

DOCUMENT = [
    OpenApiExample("A document", value=DOCUMENT_VALUE, response_only=True, status_codes=["200"]),
    OpenApiExample(
        "Not found",
        value={"error": "not_found", "message": "no document 'eng/oncall'"},
        response_only=True,
        status_codes=["404"],
    ),
]

DOCUMENT_PAGE = [
    # drf-spectacular wraps a list view's example in the pagination envelope
    OpenApiExample("A page of documents", value=DOCUMENT_VALUE, response_only=True, status_codes=["200"]),
    OpenApiExample(
        "Unknown environment",
        value={
            "error": "invalid_input",
            "message": "unknown environment 'prod' (known: production, staging)",
            "fields": {"environment": ["unknown environment 'prod' (known: production, staging)"]},
        },
        response_only=True,
        status_codes=["400"],
    ),
]

DELETE = [
    OpenApiExample(
        "Unknown connector",
        value={
            "error": "invalid_input",
            "message": "unknown connector ids: [7]",
            "fields": {"connector_id": ["unknown connector ids: [7]"]},
        },
        response_only=True,
        status_codes=["400"],
    ),
]

HEALTH = [
    OpenApiExample(
        "Healthy",
        value={"status": "ok", "checks": {"postgres": "ok", "backend": "ok"}},
        response_only=True,
        status_codes=["200"],
    ),
    OpenApiExample(
        "Backend down",
        value={
            "status": "unavailable",
            "checks": {"postgres": "ok", "backend": "unavailable"},
        },
        response_only=True,
        status_codes=["503"],
    ),
]
