"""Text from a model or a profile made literal in the bundle's Markdown (report.md, README.md).

`printable` first (one line, no control character: nothing can end a table row or a paragraph), then every
character CommonMark gives a meaning, and GitHub's math delimiter `$`, escaped with a backslash: the text shows
as itself in a table cell or a paragraph, never as a link, an emphasis, code, HTML or a column break.
"""

from __future__ import annotations

from printable import printable

_MARKDOWN_SPECIAL = frozenset("\\`*_{}[]<>()#+-.!|~&$")  # CommonMark's, and GitHub's math delimiter


def markdown_text(text: str) -> str:
    """Model text made literal in a Markdown table cell or paragraph: `printable` (one line, no control
    character), then every Markdown character escaped."""
    return "".join(f"\\{char}" if char in _MARKDOWN_SPECIAL else char for char in printable(text))
