"""tvm_ext.kernels.extern_mac's loop builders for the TE extern kernels (the integer LSTM's gates, SVDF's state
update)."""

from __future__ import annotations

import pytest

pytest.importorskip("tvm")
from tvm import tirx  # noqa: E402

from tvm_ext.kernels.extern_mac import over_tiles  # noqa: E402


@pytest.mark.parametrize("total, expected", [(10, [("loop t", 2, 4), (8, 2)]), (8, [("loop t", 2, 4)]),
                                             (3, [(0, 3)])])
def test_over_tiles_covers_whole_tiles_in_a_loop_and_the_remainder_once(total, expected):
    """extern_mac.over_tiles (the LSTM's gates, SVDF's state update): a loop over the whole tiles of four with its
    body at `var * 4` for four units, then one body at the remainder's first unit for the rest; nothing empty."""
    bodies = []

    def body(first, count):
        bodies.append((first, count))
        return tirx.Evaluate(tirx.const(0, "int32"))

    stmts = over_tiles(total, 4, body, "t")
    shapes = []
    for stmt, (first, count) in zip(stmts, bodies):
        if isinstance(stmt, tirx.For):
            assert isinstance(first, tirx.Mul) and first.a.same_as(stmt.loop_var) and int(first.b) == 4
            shapes.append((f"loop {stmt.loop_var.name}", int(stmt.extent), count))
        else:
            shapes.append((int(first), count))
    assert len(stmts) == len(bodies) and shapes == expected
