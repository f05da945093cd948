r"""Words from a profile (flags) as CMake arguments that read back as exactly those words.

The profile loader already refuses every character that means something to CMake (`target.field_grammar`);
this is the second defence. `cmake_quoted` writes a quoted argument ("..."): inside it `"`, `$` (a variable
reference `${...}` or `$ENV{...}`) and `;` (a list separator) are escaped with a backslash, so the text can
neither end the argument nor the command (`")` + `execute_process(...)` stays one flag) nor expand anything;
`#`, spaces and parentheses are plain text inside quotes. `cmake_argument` writes a word of only safe
characters bare (as the templates spell flags) and anything else quoted. Words of safe characters keep their
bytes either way.

CMake's generators give each flag to the compiler as one shell word, but some text cannot reach it intact, and
is refused with ValueError: a control character (a newline: CMake's Makefile generator writes it raw and the
build breaks), a backslash (compile options are a CMake list, whose expansion takes `\;` as an escape, and
the Makefile generator changes backslash runs before `#`), a square bracket (an unbalanced one joins list
elements), `$<` (a generator expression, which the option commands evaluate), and an empty word (a bare
argument would drop it).
"""

from __future__ import annotations

import re

_UNPASSABLE = re.compile(r"[\x00-\x1f\x7f\\\[\]]|\$<")
_QUOTED_ESCAPES = re.compile(r'["$;]')
_BARE_WORD = re.compile(r"[A-Za-z0-9_.,=+/:@%-]+")


def cmake_quoted(*words: str) -> str:
    """One quoted CMake argument holding the list `words` (one word: that word; several: a CMake list of them,
    as COMPILE_OPTIONS takes). ValueError for a word CMake cannot pass on unchanged (see the module's
    docstring)."""
    for word in words:
        if not word or _UNPASSABLE.search(word):
            raise ValueError(f"{word!r} is empty or holds a control character, a backslash, a square bracket or "
                             "'$<', which CMake does not pass on unchanged")
    return '"' + ";".join(_QUOTED_ESCAPES.sub(lambda match: "\\" + match[0], word) for word in words) + '"'


def cmake_argument(word: str) -> str:
    """`word` as one CMake argument: bare when it has only letters, digits and `_ . , = + / : @ % -`, else
    `cmake_quoted(word)`."""
    return word if _BARE_WORD.fullmatch(word) else cmake_quoted(word)
