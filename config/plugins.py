"""The plugins' alias table (settings.KNOWLEDGE_PLUGINS): per kind (pipeline layer, stage, connector),
alias -> CLASS and OPTIONS.

The flat KNOWLEDGE_* values of the environment become the aliases' options here, once; no plugin
reads settings in its constructor, so a plugin built with explicit options is built with only those.
"""

from __future__ import annotations

from typing import Any

PIPELINE = "knowledge.pipeline"


def _entry(path: str, **options: Any) -> dict[str, Any]:
    return {"CLASS": f"{PIPELINE}.{path}", "OPTIONS": options}


def plugin_table(values: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """The table from the settings' flat values (`values` is the settings module's namespace)."""
    chunk = {"max_tokens": values["KNOWLEDGE_CHUNK_TOKENS"], "overlap": values["KNOWLEDGE_CHUNK_OVERLAP"]}
    transport = {
        "batch_size": values["KNOWLEDGE_HTTP_EMBEDDER_BATCH"],
        "timeout": values["KNOWLEDGE_HTTP_EMBEDDER_TIMEOUT"],
        "max_retries": values["KNOWLEDGE_HTTP_EMBEDDER_RETRIES"],
    }
    alpha = values["KNOWLEDGE_FUSION_ALPHA"]
    return {
        "embedder": {
            "hashing": _entry("embedders.hashing.HashingEmbedder"),
            "local": _entry("embedders.local.LocalEmbedder", model=values["KNOWLEDGE_LOCAL_MODEL"]),
            # Each catalogue model under a name of its own, for `manage.py reindex --embedder <alias>`.
            "local-minilm": _entry("embedders.local.LocalEmbedder", model="all-minilm-l6-v2"),
            "local-bge-small": _entry("embedders.local.LocalEmbedder", model="bge-small-en-v1.5"),
            "openai": _entry(
                "embedders.openai.OpenAIEmbedder",
                base_url=values["KNOWLEDGE_OPENAI_BASE_URL"],
                api_key=values["KNOWLEDGE_OPENAI_API_KEY"],
                model=values["KNOWLEDGE_OPENAI_MODEL"],
                dimension=values["KNOWLEDGE_OPENAI_DIMENSION"],
                send_dimensions=values["KNOWLEDGE_OPENAI_SEND_DIMENSIONS"],
                **transport,
            ),
            "ollama": _entry(
                "embedders.ollama.OllamaEmbedder",
                base_url=values["KNOWLEDGE_OLLAMA_BASE_URL"],
                model=values["KNOWLEDGE_OLLAMA_MODEL"],
                dimension=values["KNOWLEDGE_OLLAMA_DIMENSION"],
                **transport,
            ),
        },
        "chunker": {
            "heading-prefix": _entry("chunkers.heading_prefix.HeadingPrefixChunker", **chunk),
            "fixed-size": _entry("chunkers.fixed_size.FixedSizeChunker", **chunk),
            "recursive": _entry("chunkers.recursive.RecursiveChunker", **chunk),
            "parent-child": _entry(
                "chunkers.parent_child.ParentChildChunker", parent_tokens=values["KNOWLEDGE_CHUNK_TOKENS"]
            ),
        },
        "fuser": {
            "zscore": _entry("fusers.zscore.ZScoreFuser", alpha=alpha),
            "rrf": _entry("fusers.rrf.RRFFuser", k=values["KNOWLEDGE_RRF_K"]),
            "weighted": _entry("fusers.weighted.WeightedFuser", alpha=alpha),
            "dbsf": _entry("fusers.dbsf.DBSFFuser", alpha=alpha),
        },
        "reranker": {
            "none": _entry("rerankers.none.NoReranker"),
            "mmr": _entry("rerankers.mmr.MMRReranker", lambda_=values["KNOWLEDGE_MMR_LAMBDA"]),
        },
        "compressor": {
            "none": _entry("compressors.none.NoCompressor"),
            "tfidf": _entry("compressors.tfidf.TfidfCompressor"),
        },
        "stage": {name: _entry(f"stages.{path}") for name, path in STAGES.items()},
        "connector": {name: {"CLASS": path, "OPTIONS": {}} for name, path in CONNECTORS.items()},
    }


STAGES = {
    "query_planner": "query.QueryPlanner",
    "multi_query": "query.MultiQuery",
    "parent_expand": "hits.ParentExpand",
    "compress": "hits.Compress",
    "diversify": "hits.Diversify",
    "decay": "hits.Decay",
    "reranker": "hits.RerankerStage",
    "compressor": "hits.CompressorStage",
}
CONNECTORS = {
    "api": "knowledge.connectors.api.ApiKind",
    "filesystem": "knowledge.connectors.filesystem.FilesystemKind",
    "web": "knowledge.connectors.web.WebKind",
    "github": "knowledge.connectors.saas.github.GithubKind",
    "slack": "knowledge.connectors.saas.slack.SlackKind",
    "confluence": "knowledge.connectors.saas.confluence.ConfluenceKind",
    "google_drive": "knowledge.connectors.saas.drive.DriveKind",
}
