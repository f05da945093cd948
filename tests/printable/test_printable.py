"""`printable`, the one escaping of text we show: every result is one line of printable characters, the same
text escaped twice reads as escaped once, printable text is kept, and each kind of character a terminal acts
on (C0 and C1 controls, DEL, format characters such as bidirectional overrides, separators, surrogates,
private use, unassigned code points) is escaped."""

from __future__ import annotations

import sys

from hypothesis import given
from hypothesis import strategies as st

from printable import printable, printable_lines


@given(st.text())
def test_any_text_becomes_one_printable_line_and_escaping_twice_changes_nothing(text: str) -> None:
    shown = printable(text)
    assert shown.isprintable() and "\n" not in shown
    assert printable(shown) == shown


NOT_PRINTABLE = ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs")  # Unicode categories; Zs but the space


@given(st.text(alphabet=st.characters(blacklist_categories=NOT_PRINTABLE) | st.just(" ")))
def test_printable_text_is_kept(text: str) -> None:
    assert printable(text) == text


def test_every_code_point_a_terminal_may_act_on_is_escaped() -> None:
    """Each code point by itself: kept when Python calls it printable (the space too), else escaped."""
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        shown = printable(char)
        assert shown == char if char.isprintable() else (shown.startswith("\\") and shown.isascii()), hex(code)


def test_the_escapes_name_the_character() -> None:
    assert printable("a\nb\rc\td") == "a\\nb\\rc\\td"
    assert printable("\x00\x07\x1b[2J\x7f\x9b") == "\\x00\\x07\\x1b[2J\\x7f\\x9b"
    assert printable("\u202eevil\u2028\u00a0\ufffe\U000e0001") == "\\u202eevil\\u2028\\xa0\\ufffe\\U000e0001"


def test_bytes_that_are_not_utf8_show_their_value() -> None:
    """A file path's byte 0xff, as Python's surrogateescape hands it over, and the same as bytes."""
    assert printable("model\udcff.onnx") == printable(b"model\xff.onnx") == "model\\xff.onnx"
    assert printable(b"caf\xc3\xa9 \x1b") == "caf\u00e9 \\x1b"


def test_lines_keep_their_breaks_and_each_is_escaped() -> None:
    assert printable_lines(b"one \x1b[31m\ntwo\r\n") == "one \\x1b[31m\ntwo\\r\n"
