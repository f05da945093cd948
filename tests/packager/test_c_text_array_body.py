"""`array_body` writes each element as `c_literal` does, also on its fast path for narrow integer types."""

from __future__ import annotations

import numpy as np
import pytest

from packager.c_text import VALUES_PER_LINE, array_body, c_literal


def literal_body(values: np.ndarray, dtype: str) -> str:
    """The initializer written element by element with c_literal (array_body's definition)."""
    flat = [c_literal(v, dtype) for v in values.reshape(-1).tolist()]
    lines = ["  " + ", ".join(flat[i:i + VALUES_PER_LINE]) + "," for i in range(0, len(flat), VALUES_PER_LINE)]
    return "{\n" + "\n".join(lines) + "\n}"


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int32", "float32"])
def test_array_body_is_c_literal_per_element(dtype: str) -> None:
    info = np.iinfo(dtype) if dtype != "float32" else np.finfo(dtype)
    values = np.concatenate([np.array([info.min, info.max, 0, 1, -1 if info.min < 0 else 2], dtype=dtype),
                             np.random.default_rng(0).integers(-100, 100, 21).astype(dtype)])
    assert array_body(values, dtype) == literal_body(values, dtype)


def test_a_float_array_declared_narrow_is_truncated_as_c_literal_does() -> None:
    values = np.array([0.5, -1.5, 3.0])
    assert array_body(values, "int8") == literal_body(values, "int8") == "{\n  0, -1, 3,\n}"
