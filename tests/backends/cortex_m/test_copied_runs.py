"""A copied window's runs of channels as calls of the ascending copy on Helium cores
(backends/cortex_m/schedules/border_window.py, ``copied_runs``): Before/Expected on small TIR kernels. The bundle
test (a padded 3x3 convolution bit-exact under QEMU) is tests/backends/cortex_m/test_common_tails.py's."""

from __future__ import annotations

import tvm
from tvm import s_tir, tirx
from tvm.script import tirx as T

from backends.cortex_m.schedules.border_window import WINDOW_COPY_BLOCK, copied_runs
from backends.cortex_m.schedules.extern_helpers import COPY_OP


def _kernel(channels: int, name: str, copy: bool) -> tirx.PrimFunc:
    """Per pixel i, a 2-tap window of `channels` int8 copied from x (the tap inside) or the padding: the copy as
    written by `border_window._window_copy` (in a block named `name`), or with `copy` each inside tap's run one
    call of the ascending copy."""

    @T.prim_func(s_tir=True)
    def func(x: T.Buffer((4 * 2 * channels,), "int8"), out: T.Buffer((4,), "int8")):
        window = T.sblock_alloc_buffer((2 * channels,), "int8")
        for i in range(4):
            with T.sblock(name):
                T.reads(x[0:4 * 2 * channels])
                T.writes(window[0:2 * channels])
                for t in range(2):
                    if i + t < 4:
                        if copy:
                            # (the runs' starts: their indices at c = 0, as the pass leaves them)
                            T.evaluate(T.call_intrin("int32", COPY_OP, T.address_of(window[T.Add(t * channels, 0)]),
                                                     T.address_of(x[T.Add((i + t) * channels, 0)]), channels, 1))
                        else:
                            for c in range(channels):
                                window[t * channels + c] = x[(i + t) * channels + c]
                    else:
                        for c in range(channels):
                            window[t * channels + c] = T.int8(-128)
            out[i] = window[0]

    return func


def test_a_window_copy_s_runs_of_a_vector_or_more_become_ascending_copies() -> None:
    """Before: each inside tap's 16 channels copied one byte per iteration. Expected: one call of the ascending copy
    per tap (16 elements of 1 byte); the padding's loop stays."""
    tvm.ir.assert_structural_equal(copied_runs(_kernel(16, WINDOW_COPY_BLOCK, False), 16),
                                   _kernel(16, WINDOW_COPY_BLOCK, True))


def test_shorter_runs_and_other_blocks_stay() -> None:
    """Runs of 3 channels (a stem's window) stay below the shortest run of 16, and a block other than a window copy
    is left alone whatever its runs."""
    for func in (_kernel(3, WINDOW_COPY_BLOCK, False), _kernel(16, "other", False)):
        tvm.ir.assert_structural_equal(copied_runs(func, 16), func)
