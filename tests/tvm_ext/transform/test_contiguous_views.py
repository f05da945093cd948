"""contiguous_copy_offset: which kernels copy a contiguous block of their input, read from their TIR."""

from __future__ import annotations

import pytest
from tvm import te, topi

from tvm_ext.transform.contiguous_views import contiguous_copy_offset

DATA = te.placeholder((5, 1, 16), "int8", name="data")


@pytest.mark.parametrize(
    "name, make, offset",
    [
        ("an UNPACK piece along the outermost axis", lambda: te.compute((1, 16), lambda i, j: DATA[3, i, j]), 48),
        ("a slice of whole rows", lambda: topi.strided_slice(DATA, [2, 0, 0], [4, 1, 16]), 32),
        ("a slice of all of it", lambda: topi.strided_slice(DATA, [0, 0, 0], [5, 1, 16]), 0),
        ("a flattening copy", lambda: topi.reshape(DATA, (80,)), 0),
        ("a slice of columns", lambda: topi.strided_slice(DATA, [0, 0, 0], [5, 1, 8]), None),
        ("a strided slice", lambda: topi.strided_slice(DATA, [0, 0, 0], [5, 1, 16], [2, 1, 1]), None),
        ("a reversal", lambda: te.compute((16,), lambda j: DATA[0, 0, 15 - j]), None),
        ("arithmetic", lambda: te.compute((1, 16), lambda i, j: DATA[3, i, j] + DATA[4, i, j]), None),
        ("a cast", lambda: te.compute((1, 16), lambda i, j: DATA[3, i, j].astype("int16")), None),
        ("a repeated row", lambda: te.compute((2, 16), lambda i, j: DATA[1, 0, j]), None),
    ],
)
def test_contiguous_copy_offset(name: str, make, offset) -> None:
    assert contiguous_copy_offset(te.create_prim_func([DATA, make()])) == offset, name
