"""A kernel marked `REVERSED_ATTR` runs its outermost loop backwards (`tvm_ext.codegen.reverse_outer_loop`), and
its stream order, read from the lowered TIR as for any kernel, says so: the output may then start above the
input it overwrites (issue 31)."""

from __future__ import annotations

import tvm
from tvm import te

from memory_planner.api import StreamOrder
from tvm_ext.codegen.codegen_c import generate_c
from tvm_ext.codegen.reverse_outer_loop import marked_reversed
from tvm_ext.layers import NUM_OUTPUTS_ATTR
from tvm_ext.schedule.kernel_schedule import inline_intermediates

C_TARGET = tvm.target.Target({"kind": "c"})
ROWS, CHANNELS = 6, 4


def _generated(func: tvm.tirx.PrimFunc):
    source = generate_c({"k": func.with_attr(NUM_OUTPUTS_ATTR, 1)}, C_TARGET)
    (order,) = [s.order for s in source.signatures["k"].streams if (s.output, s.input) == (0, 0)]
    return source.c_text, order


def _rows_plus_one() -> tvm.tirx.PrimFunc:
    """int8 rows x channels + 1: loops over rows, then channels (one pass per element)."""
    a = te.placeholder((ROWS, CHANNELS), "int8", name="a")
    b = te.compute((ROWS, CHANNELS), lambda i, j: a[i, j] + tvm.tirx.const(1, "int8"), name="b")
    return inline_intermediates(te.create_prim_func([a, b]))


def test_a_marked_kernel_runs_its_rows_last_first_and_may_write_above_its_input() -> None:
    """The rows come last first, the channels within a row still in order: pass (row, channel) writes byte
    4 row + channel while the later passes read up to the end of its row, so the output may start one row
    (4 bytes) above the input; forwards it could start one byte below."""
    forwards_c, forwards = _generated(_rows_plus_one())
    backwards_c, backwards = _generated(marked_reversed(_rows_plus_one()))
    elements = [CHANNELS * row + channel for row in reversed(range(ROWS)) for channel in range(CHANNELS)]
    assert backwards == StreamOrder(tuple((e, e + 1) for e in elements), tuple((e, e + 1) for e in elements))
    assert forwards.lead_bytes() == 1 and backwards.trail_bytes() == CHANNELS
    assert f"({ROWS - 1} - " in backwards_c and f"({ROWS - 1} - " not in forwards_c


def test_a_kernel_of_two_loops_is_left_as_it_is() -> None:
    """Two top-level loop nests (an intermediate not inlined): no single outer loop to reverse, so the marked
    kernel's C and stream order are the unmarked one's."""
    a = te.placeholder((ROWS, CHANNELS), "int8", name="a")
    b = te.compute((ROWS, CHANNELS), lambda i, j: a[i, j] + tvm.tirx.const(1, "int8"), name="b")
    c = te.compute((ROWS, CHANNELS), lambda i, j: b[(ROWS - 1) - i, j] * tvm.tirx.const(2, "int8"), name="c")
    func = te.create_prim_func([a, c])
    assert _generated(marked_reversed(func)) == _generated(func)
