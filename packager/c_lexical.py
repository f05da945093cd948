"""A lexical check of a bundle's C: the last guard that no model text became code.

Model names reach the C only through `packager.c_text.comment` and `c_string`; every identifier is ours.
This check holds the result to that: outside comments and string literals only identifiers, numbers,
punctuation, whitespace and character literals; preprocessor lines only the directives and headers we emit; printable ASCII
only, no trigraph (`??x`), no backslash outside a string's escapes, no `/*` inside a comment. A failure is
our bug (an escaper missed something), never the model's: it raises `UnsafeCError`, an internal error.
"""

from __future__ import annotations

import re

INCLUDED_SYSTEM_HEADERS = ("stddef.h", "stdint.h", "stdbool.h", "stdio.h", "string.h", "math.h", "float.h", "arm_acle.h",
                           "arm_mve.h")
"""The system headers a bundle's C may include (`#include <...>`); its own are included as `"<name>.h"`."""

_TOKEN = re.compile(
    r"(?P<code>(?:[A-Za-z0-9_ \t\n{}()\[\];,.+\-*%<>=!&|^~?:]+|/(?![*/]))+)"
    r'|(?P<string>"(?:[ !#-\[\]-~]|\\[\\"?nt]|\\[0-7]{3})*")'  # printable ASCII but " and \, or escapes
    r"|(?P<char>'(?:[ -&(-\[\]-~]|\\[\\'0nt])')"  # one printable ASCII char but ' and \, or an escape
    r"|(?P<comment>/\*(?:[ -)+-.0-~\n]|\*(?!/)|/(?!\*))*\*/)"  # printable ASCII and newlines, no /*
    r"|(?P<directive>#[ \t]*(?:include[ \t]+(?:<(?:" + "|".join(map(re.escape, INCLUDED_SYSTEM_HEADERS)) + r')>'
    r'|"\w+\.h")(?=[ \t]*(?:\n|/\*))'
    r"|(?:ifndef|ifdef|if|elif|define|endif|else|undef|error)\b))"
)


class UnsafeCError(RuntimeError):
    """Generated C holds text our escapers should have made impossible: an internal error."""


def check_c_text(file_name: str, text: str) -> None:
    """Raise UnsafeCError naming `file_name`, the line and what is wrong if `text` breaks the rules above."""
    if "??" in text:
        _fail(file_name, text, text.index("??"), "a trigraph sequence '??'")
    position = 0
    while position < len(text):
        token = _TOKEN.match(text, position)
        if token is None:
            _fail(file_name, text, position, f"{text[position:position + 2]!r} outside a comment or string we write")
        if token.lastgroup == "directive" and text[text.rfind("\n", 0, position) + 1 : position].strip(" \t"):
            _fail(file_name, text, position, "a '#' that does not begin a line")
        position = token.end()


def _fail(file_name: str, text: str, position: int, what: str) -> None:
    line = text.count("\n", 0, position) + 1
    raise UnsafeCError(f"generated {file_name} line {line} has {what}: an escaper let model text through")
