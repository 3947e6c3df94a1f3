"""Reads BEIR-format datasets: corpus.jsonl, queries.jsonl and qrels/<split>.tsv."""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

from knowledge.connectors.types import SourceAcl, SourceDocument

PUBLIC = SourceAcl(public=True)


def check_dataset(root: Path, split: str | None = None) -> None:
    """Raise FileNotFoundError naming the first missing file of a BEIR dataset."""
    needed = [root / "corpus.jsonl"] + (
        [root / "queries.jsonl", root / "qrels" / f"{split}.tsv"] if split else []
    )
    for path in needed:
        if not path.is_file():
            raise FileNotFoundError(f"not a BEIR dataset: {path} is missing")


def iter_corpus(root: Path) -> Iterator[SourceDocument]:
    """Corpus entries as public documents (external id = the corpus `_id`)."""
    with (root / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                row = json.loads(line)
                yield SourceDocument(
                    external_id=str(row["_id"]),
                    title=row.get("title") or "",
                    content=row.get("text") or "",
                    acl=PUBLIC,
                )


def corpus_size(root: Path) -> int:
    with (root / "corpus.jsonl").open(encoding="utf-8") as handle:
        return sum(1 for line in handle if line.strip())


def corpus_hash(root: Path) -> str:
    """SHA-256 of corpus.jsonl, to tell whether an ingested copy is still current."""
    digest = hashlib.sha256()
    with (root / "corpus.jsonl").open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_queries(root: Path) -> dict[str, str]:
    with (root / "queries.jsonl").open(encoding="utf-8") as handle:
        return {str(row["_id"]): row["text"] for row in map(json.loads, filter(str.strip, handle))}


def load_qrels(root: Path, split: str) -> dict[str, dict[str, int]]:
    """query id → {document id: graded relevance}."""
    qrels: dict[str, dict[str, int]] = {}
    with (root / "qrels" / f"{split}.tsv").open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t")
        for row in reader:
            if len(row) < 3 or row[0] == "query-id":
                continue
            qrels.setdefault(row[0], {})[row[1]] = int(row[2])
    return qrels
