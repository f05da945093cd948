"""RV32's MAC loop nests inside a TE extern stage (an LSTM's gate products, an SVDF's feature product) as calls of
the bundle's out-of-line four-channel window MAC (`backends.riscv.schedules.mac.extern_mac_calls`), where each kept
its own copy of TVM's loops; a window shorter than the helper takes (MIN_REDUCTION) keeps them."""

from __future__ import annotations

import tvm
from tvm import te, tirx

from backends.riscv.schedules import RISCV_MAC_SCHEDULES
from backends.riscv.schedules.mac import MAC4_OP, MIN_REDUCTION
from tvm_ext.kernels import Rounding
from tvm_ext.kernels.svdf import svdf_state_update
from tvm_ext.schedule.kernel_schedule import inline_intermediates
from tvm_ext.tir.tir_walk import walk


def _state_update(filters: int, depth: int) -> tirx.PrimFunc:
    """An SVDF state update (one TE extern stage) of ``filters`` filters over ``depth`` int8 inputs."""
    data = te.placeholder((2, depth), "int8", name="data")
    state = te.placeholder((2, filters * 5), "int16", name="state")
    weights = te.placeholder((filters, depth), "int8", name="weights")
    offsets = te.placeholder((filters,), "int32", name="offsets")
    out = svdf_state_update(data, state, weights, offsets, memory=5, state_zero_point=0, multiplier=1 << 30,
                            shift=-3, rounding=Rounding.DOUBLE)
    return te.create_prim_func([data, state, weights, offsets, out])


def _mac4_sizes(func: tirx.PrimFunc) -> list[list[int]]:
    """The window sizes (x_row_stride, w_channel_stride, rows, row_len) of ``func``'s four-channel MAC calls."""
    return [[int(arg) for arg in node.args[3:]] for node in walk(func.body)
            if isinstance(node, tvm.ir.Call) and node.op.name == MAC4_OP]


def test_an_extern_stage_four_channel_product_calls_the_four_channel_mac() -> None:
    """Eight filters over nine inputs: the feature product's loops of four filters, one call (the tile loop around
    it stays), strides 9 and 9, one row of 9."""
    scheduled = inline_intermediates(_state_update(filters=8, depth=9), 8, RISCV_MAC_SCHEDULES)
    assert _mac4_sizes(scheduled) == [[9, 9, 1, 9]]


def test_an_extern_stage_product_shorter_than_the_helper_takes_keeps_its_loops() -> None:
    scheduled = inline_intermediates(_state_update(filters=8, depth=MIN_REDUCTION - 1), 8, RISCV_MAC_SCHEDULES)
    assert _mac4_sizes(scheduled) == []
