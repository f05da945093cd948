"""A kernel's tests that go one way at every iteration reaching them keep only that branch
(backends/cortex_m/schedules/unreached_branches.py): a pixel loop's three-way test after the pairs (the interior
branch no pixel reaches where the pairs tile an even count of columns, kept for an odd count), a test the tests
around it decide, and tests that read anything but the loop variables (kept)."""

from __future__ import annotations

import tvm
from tvm.script import tirx as T

from backends.cortex_m.schedules.unreached_branches import unreached_branches


def _pixel_loop(width: int):
    """A padded 3x3 convolution's pixel loop of ``width`` columns after ``pixel_pairs`` (pairs from column 1 over the
    interior columns 1 .. width - 2): a pair's first pixel, then any other pixel, inside the image or not."""
    last = width - 1

    @T.prim_func(s_tir=True)
    def func(out: T.Buffer((16,), "int8")):
        window = T.sblock_alloc_buffer((4,), "int8")  # (a kernel's root block)
        for x in range(width):
            if 1 <= x and x < last and T.bitwise_and(x, 1) == 1 and x + 1 < last:
                out[x] = T.int8(2)
            else:
                if x < 1 or x == last or T.bitwise_and(x, 1) == 1:
                    if 1 <= x and x < last:
                        out[x] = T.int8(1)
                    else:
                        window[0] = T.int8(0)
                        out[x] = window[0]
    return func


def test_the_interior_branch_no_pixel_reaches_is_gone_and_kept_where_one_does() -> None:
    @T.prim_func(s_tir=True)
    def even(out: T.Buffer((16,), "int8")):
        window = T.sblock_alloc_buffer((4,), "int8")
        for x in range(10):
            if 1 <= x and x < 9 and T.bitwise_and(x, 1) == 1 and x + 1 < 9:
                out[x] = T.int8(2)
            else:
                if x < 1 or x == 9 or T.bitwise_and(x, 1) == 1:
                    window[0] = T.int8(0)
                    out[x] = window[0]

    tvm.ir.assert_structural_equal(unreached_branches(_pixel_loop(10)), even.with_attr("global_symbol", "func"))
    odd = _pixel_loop(9)  # interior columns 1..7: the pairs (1, 2) .. (5, 6), column 7 on its own
    tvm.ir.assert_structural_equal(unreached_branches(odd), odd)


def test_a_test_the_tests_around_it_decide_keeps_its_branch_and_an_unknown_one_stays() -> None:
    @T.prim_func(s_tir=True)
    def before(x: T.Buffer((8,), "int8"), out: T.Buffer((8,), "int8")):
        window = T.sblock_alloc_buffer((4,), "int8")
        for i, j in T.grid(8, 3):
            if i < 4:
                if i + j < 6:  # always, for i < 4 and j < 3
                    out[i] = T.int8(1)
                else:
                    out[i] = T.int8(3)
            else:
                if x[i] < T.int8(0):  # reads a buffer: kept
                    window[0] = x[i]
                if i // 4 == 0:  # never, for i >= 4
                    out[i] = T.int8(2)

    @T.prim_func(s_tir=True)
    def after(x: T.Buffer((8,), "int8"), out: T.Buffer((8,), "int8")):
        window = T.sblock_alloc_buffer((4,), "int8")
        for i, j in T.grid(8, 3):
            if i < 4:
                out[i] = T.int8(1)
            else:
                if x[i] < T.int8(0):
                    window[0] = x[i]

    tvm.ir.assert_structural_equal(unreached_branches(before), after.with_attr("global_symbol", "before"))
