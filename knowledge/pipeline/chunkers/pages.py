"""Page numbers of paged text: extractors separate pages (PDF) and slides (PPTX) with form feeds."""

from __future__ import annotations

from bisect import bisect_right

PAGE_BREAK = "\f"


class PageIndex:
    """The 1-based page of any offset in a text; None for every offset when the text has no page breaks."""

    def __init__(self, text: str) -> None:
        self._breaks = [i for i, char in enumerate(text) if char == PAGE_BREAK] if PAGE_BREAK in text else []
        self.paged = bool(self._breaks)

    def page_at(self, offset: int) -> int | None:
        return bisect_right(self._breaks, offset) + 1 if self.paged else None

    def metadata(self, offset: int, **extra: object) -> dict[str, object]:
        """Chunk metadata with `page` (only for paged text) and `extra`."""
        return {**extra, "page": self.page_at(offset)} if self.paged else dict(extra)
