"""Plain text from code (help strings, docstrings, rule annotations) made safe inside Markdown
tables."""

from __future__ import annotations

import html


def cell(text: str) -> str:
    """One table cell: no line breaks, no raw HTML (`<day>` would vanish as a tag), no column
    breaks."""
    return html.escape(" ".join(text.split()), quote=False).replace("|", "\\|")


def code(text: str) -> str:
    """An inline code span that survives a `|` inside a table cell."""
    return "`" + text.replace("|", "\\|") + "`"


def prose(text: str) -> str:
    """A paragraph: one line, no raw HTML; `|` stays as is outside tables."""
    return html.escape(" ".join(text.split()), quote=False)
