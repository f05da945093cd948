"""Small helpers that turn values into C text that reads as if written by hand."""

from __future__ import annotations

import math

import numpy as np

VALUES_PER_LINE = 8
_FLOAT_SUFFIXES = {"float32": "f", "float64": ""}
# <stdint.h> macros giving a decimal literal the integer type's width and signedness: without them a uint64
# value above INT64_MAX has no C99 type, and a uint32 one above INT32_MAX is a signed long long.
_WIDE_INTEGER_MACROS = {"int64": "INT64_C", "uint32": "UINT32_C", "uint64": "UINT64_C"}
_NARROW_INTEGERS = frozenset({"int8", "uint8", "int16", "uint16"})
"""Integer types each value of which is its plain decimal literal (`c_literal`'s last case)."""


_COMMENT_PAIRS = {"/": "*", "*": "/"}  # each character that makes a comment delimiter with the other


def comment(text: str) -> str:
    r"""`text` (model text: any characters) made safe inside a `/* ... */` comment, on one line.

    The result is printable ASCII only and holds no `*/`, no `/*` and no `??` (gcc -std=c99 reads
    trigraphs: `??/` is a backslash), provided the characters right beside it are none of `/`, `*`, `?`
    (our templates put spaces or punctuation there). A backslash becomes `\\`; a `/` or `*` next to its
    partner gets a backslash before it; a `?` after a `?` becomes `\?`; whitespace runs become one space;
    every other byte outside printable ASCII (control characters, the UTF-8 bytes of non-ASCII
    characters) is written `\xNN`. So no model name can end the comment or change the code.
    """
    chars = " ".join(text.split())
    out = []
    for i, char in enumerate(chars):
        before = chars[i - 1] if i > 0 else ""
        after = chars[i + 1] if i + 1 < len(chars) else ""
        if char == "\\":
            out.append("\\\\")
        elif char in _COMMENT_PAIRS:
            out.append(f"\\{char}" if _COMMENT_PAIRS[char] in (before, after) else char)
        elif char == "?" and before == "?":
            out.append("\\?")
        elif " " <= char <= "~":
            out.append(char)
        else:
            out.append("".join(f"\\x{byte:02x}" for byte in char.encode("utf-8", "backslashreplace")))
    return "".join(out)


def c_string(text: str) -> str:
    r"""`text` (model text: any characters) as one C99 string literal, quotes included, ASCII only.

    Printable ASCII stands for itself except `"`, `\\` and `?` (always escaped, so no trigraph can
    form); every other byte of its UTF-8 encoding is a three-digit octal escape, which cannot take the
    next character into the escape the way `\\x` would. A `%` stays: pass the literal to printf as an
    argument, never as the format.
    """
    out = []
    for byte in text.encode("utf-8", "backslashreplace"):
        char = chr(byte)
        if char in '"\\?':
            out.append("\\" + char)
        elif 0x20 <= byte <= 0x7E:
            out.append(char)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def c_literal(value, dtype: str) -> str:
    """One element as an exact C99 literal: hex floats for float32/float64, decimals for integers."""
    if dtype in _FLOAT_SUFFIXES:
        return _float_literal(float(value), _FLOAT_SUFFIXES[dtype])
    if dtype == "int32" and int(value) == -(2**31):
        return "(-2147483647 - 1)"
    if dtype == "int64" and int(value) == -(2**63):
        return "(-INT64_C(9223372036854775807) - 1)"
    if dtype in _WIDE_INTEGER_MACROS:
        return f"{_WIDE_INTEGER_MACROS[dtype]}({int(value)})"
    return str(int(value))


def _float_literal(value: float, suffix: str) -> str:
    """`value` as an exact hexadecimal floating literal with `suffix` ("f": float, "": double)."""
    if math.isnan(value):
        return "NAN"
    if math.isinf(value):
        return ("" if value > 0 else "-") + f"HUGE_VAL{suffix.upper()}"
    mantissa, exponent = value.hex().split("p")
    mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}p{exponent}{suffix}"


def array_body(values: np.ndarray, dtype: str, indent: str = "  ") -> str:
    """The `{ ... }` initializer of a flat C array, VALUES_PER_LINE values per line."""
    array = np.asarray(values).reshape(-1)
    items = array.tolist()  # Python numbers: faster
    # An integer array of a narrow type: str of each Python int, as c_literal gives it (a weights file's
    # hundreds of thousands of values without a call each)
    flat = list(map(str, items)) if dtype in _NARROW_INTEGERS and array.dtype.kind in "iu" \
        else [c_literal(v, dtype) for v in items]
    lines = [
        indent + ", ".join(flat[i : i + VALUES_PER_LINE]) + "," for i in range(0, len(flat), VALUES_PER_LINE)
    ]
    return "{\n" + "\n".join(lines) + "\n}"


def macro_prefix(model: str) -> str:
    return model.upper()


EXTERN_C_BEGIN = ("#ifdef __cplusplus", 'extern "C" {', "#endif")
EXTERN_C_END = ("#ifdef __cplusplus", "}", "#endif")
"""The lines around a header's declarations that give them C linkage in a C++ translation unit."""
