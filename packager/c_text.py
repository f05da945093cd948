"""Small helpers that turn values into C text that reads as if written by hand."""

from __future__ import annotations

import math

import numpy as np

VALUES_PER_LINE = 8


def comment(text: str) -> str:
    """`text` safe inside a /* */ comment, on one line."""
    return " ".join(text.replace("*/", "* /").split())


def c_literal(value, dtype: str) -> str:
    """One element as an exact C99 literal: hex floats for float32, decimals for integers."""
    if dtype == "float32":
        value = float(value)
        if math.isnan(value):
            return "NAN"
        if math.isinf(value):
            return "HUGE_VALF" if value > 0 else "-HUGE_VALF"
        mantissa, exponent = value.hex().split("p")
        mantissa = mantissa.rstrip("0").rstrip(".")
        return f"{mantissa}p{exponent}f"
    if dtype == "int32" and int(value) == -(2**31):
        return "(-2147483647 - 1)"
    if dtype == "int64":
        # -2^63 has no literal: 9223372036854775808 does not fit int64_t (a warning, and unsigned).
        return "(-INT64_C(9223372036854775807) - 1)" if int(value) == -(2**63) else f"INT64_C({int(value)})"
    return str(int(value))


def array_body(values: np.ndarray, dtype: str, indent: str = "  ") -> str:
    """The `{ ... }` initializer of a flat C array, VALUES_PER_LINE values per line."""
    flat = [c_literal(v, dtype) for v in np.asarray(values).reshape(-1)]
    lines = [
        indent + ", ".join(flat[i : i + VALUES_PER_LINE]) + "," for i in range(0, len(flat), VALUES_PER_LINE)
    ]
    return "{\n" + "\n".join(lines) + "\n}"


def macro_prefix(model: str) -> str:
    return model.upper()
