"""Words from a profile (a compiler, flags) as text GNU make hands to the shell unchanged.

The profile loader already refuses every character that means something to make or the shell
(`target.field_grammar`); this is the second defence, for a Profile made in Python or a grammar grown later.
A make variable holding a command or flags reaches a recipe, which make expands and then gives to /bin/sh:
so each word is first quoted for the shell (`shlex.quote`: '...' around any word with a character outside
letters, digits and `@ % + = : , . / - _`), then every `$` is written `$$` (make's expansion gives back one).
What else make reads depends on where the text stands (`MakeContext`):
- "assignment", `VAR = text` in a Makefile: a `#` starts a comment, so each `#` is escaped with the
  backslashes make wants (the run of backslashes before it doubled, then one more);
- "rule", a target-specific `target: VAR = text`: make cuts such a line at its first `;` or `#` that is not
  escaped the same way, and unescapes both before it, so each `;` and `#` is escaped so;
- "command line", a `VAR=text` argument of make: nothing but `$` is special.
Words of safe characters come out unchanged, so bundles of ordinary profiles keep their bytes.

A newline or any other control character cannot be written in a make line (a newline would start a recipe
line): `make_words` refuses it with ValueError.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from typing import Literal

MakeContext = Literal["assignment", "rule", "command line"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_ESCAPED_IN = {
    "assignment": re.compile(r"(\\*)(#)"),
    "rule": re.compile(r"(\\*)([#;])"),
}


def make_words(words: Iterable[str], context: MakeContext = "assignment") -> str:
    """`words` as text make reads, in `context`, as a value that reaches the shell as exactly these words,
    space-separated. ValueError for a word holding a control character (a newline, a tab)."""
    quoted = []
    for word in words:
        if _CONTROL.search(word):
            raise ValueError(f"{word!r} holds a control character, which make cannot be given")
        quoted.append(shlex.quote(word))
    text = " ".join(quoted).replace("$", "$$")
    if context == "command line":
        return text
    return _ESCAPED_IN[context].sub(lambda match: match[1] * 2 + "\\" + match[2], text)
