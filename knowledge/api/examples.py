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
                    "rrf_score": 0.0328,
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
