"""The one escaping of text we show to people: terminal lines, report.md, memory_plan.svg's labels, report.html.

Text we print or write for reading comes partly from files we did not write: tensor, node and layer names,
operator runtimes' and TVM's messages quoting them, file paths the operating system hands over as bytes.
Such text may hold terminal control sequences (ESC, OSC, BEL), NUL, line breaks that forge a second line,
bidirectional overrides that reorder what is shown, or bytes that are not UTF-8. `printable` makes any of it
one line of visible characters, so that what a reader sees is what the text holds:

- every character Python's `str.isprintable` accepts stays, the plain space too (so backslashes stay: the
  result is unambiguous enough to read, not meant to be parsed back);
- a line feed, carriage return and tab become `\\n`, `\\r`, `\\t`; a byte that was not UTF-8 (the lone
  surrogate U+DC80..U+DCFF that Python's `surrogateescape` makes of it, as in file paths) becomes `\\xNN`
  with the byte's value; every other character that is not printable (controls, C1 controls, format
  characters such as U+202E RIGHT-TO-LEFT OVERRIDE, separators other than the space, surrogates, private use,
  unassigned code points) becomes `\\xNN`, `\\uNNNN` or `\\UNNNNNNNN`.

The result holds printable characters only, so `printable` leaves it unchanged: escaping twice (a message
built from escaped names, then printed) shows the same text as escaping once.
"""

from __future__ import annotations

from html import escape

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_SURROGATE_ESCAPES = range(0xDC80, 0xDD00)  # the bytes 0x80..0xFF that Python's surrogateescape decoded


def printable(text: str | bytes) -> str:
    """`text` as one line of printable characters (see the module docstring). Bytes are decoded as UTF-8,
    each invalid byte shown as `\\xNN`."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="surrogateescape")
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else _escape(char) for char in text)


def markup_text(text: str | bytes) -> str:
    """`text` made literal in XML or HTML, as character data or a quoted attribute value: `printable` (XML 1.0
    admits no control character, not even as a reference, nor a lone surrogate), then `&`, `<`, `>`, `"` and
    `'` escaped as character references."""
    return escape(printable(text), quote=True)


def printable_lines(text: str | bytes) -> str:
    """`text` whose lines (split at line feeds only) are each made `printable`, joined by line feeds: for
    relaying several lines (a traceback, a library's log) as they were, each line still one line."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="surrogateescape")
    return "\n".join(printable(line) for line in text.split("\n"))


def _escape(char: str) -> str:
    code = ord(char)
    if char in _NAMED:
        return _NAMED[char]
    if code in _SURROGATE_ESCAPES:
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
