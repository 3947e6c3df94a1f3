"""Text extraction from files (PDF, Word, PowerPoint, HTML, Markdown, text), bounded in size and time.

Extractors are pure functions of bytes (no Django, no network); `sandbox.Sandbox` runs them in a
child process with a wall-clock timeout and a memory limit, so a hostile file cannot hang or exhaust a
worker. Headings come out as Markdown headings (the heading-prefix chunker keys on them), and paged
formats separate pages (PDF) or slides (PPTX) with form feeds (`\\f`), which chunkers turn into
`page` numbers.
"""
