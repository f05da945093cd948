"""The bundle's helpers in SVDF's state update (one TE extern stage, backends.cortex_m.schedules.extern_helpers): on a DSP core the
feature product of each whole tile of four filters is one dual MAC call and the state's shift one ascending
copy; a remainder of fewer filters keeps its scalar loop; other cores keep the loops as written. And the time
product, its state zero point folded, as the row dot product (backends.cortex_m.schedules.row_dot)."""

from __future__ import annotations

import pytest

tvm = pytest.importorskip("tvm")
from tvm import te, tirx  # noqa: E402

from backends.cortex_m.helpers.dual_mac_c import DUAL_MAC_CHANNELS  # noqa: E402
from backends.cortex_m.helpers.dual_mac_interleaved_c import INTERLEAVED_GROUP  # noqa: E402
from backends.cortex_m.schedules import DUAL_MAC_SCHEDULES  # noqa: E402
from backends.cortex_m.schedules.dual_mac import DUAL_MAC_OP  # noqa: E402
from backends.cortex_m.schedules.extern_helpers import (COPY_OP, STATE_SHIFT_OP, TRANSPOSE_OP,  # noqa: E402
                                                       _transpose_call, extern_helper_calls)
from tvm_ext.kernels import Rounding  # noqa: E402
from tvm_ext.kernels.extern_mac import INTERLEAVED_TILE, LANE_GROUP  # noqa: E402
from tvm_ext.kernels.lstm import GATE_TILE  # noqa: E402
from tvm_ext.kernels.svdf import FEATURE_TILE, svdf_output, svdf_output_rows, svdf_state_update  # noqa: E402
from backends.cortex_m.schedules.row_dot import LANE_GROUP as MATCHER_LANE_GROUP  # noqa: E402
from backends.cortex_m.schedules.row_dot import ROW_DOT1_OPS, ROW_DOT_LANES_OP, ROW_DOT_OP  # noqa: E402
from tvm_ext.schedule.kernel_schedule import inline_intermediates  # noqa: E402
from tvm_ext.tir.tir_walk import walk  # noqa: E402


def _state_update(filters: int, depth: int = 9, memory: int = 5, batch: int = 2) -> tirx.PrimFunc:
    data = te.placeholder((batch, depth), "int8", name="data")
    state = te.placeholder((batch, filters * memory), "int16", name="state")
    weights = te.placeholder((filters, depth), "int8", name="weights")
    offsets = te.placeholder((filters,), "int32", name="offsets")
    out = svdf_state_update(data, state, weights, offsets, memory=memory, state_zero_point=0,
                            multiplier=1 << 30, shift=-3, rounding=Rounding.DOUBLE)
    return te.create_prim_func([data, state, weights, offsets, out])


def _calls(func: tirx.PrimFunc) -> list:
    """The helper calls of ``func`` as (op name, arguments)."""
    return [(node.op.name, list(node.args)) for node in walk(func.body)
            if isinstance(node, tvm.ir.Call) and node.op.name in (DUAL_MAC_OP, COPY_OP, STATE_SHIFT_OP)]


def _product_blocks(func: tirx.PrimFunc) -> int:
    return sum(1 for node in walk(func.body) if isinstance(node, tvm.s_tir.SBlock)
               and node.name_hint == "svdf_feature_product")


def test_dsp_state_update_calls_the_dual_mac_and_the_state_shift() -> None:
    scheduled = inline_intermediates(_state_update(filters=8), 4, DUAL_MAC_SCHEDULES)
    calls = _calls(scheduled)
    macs = [args for op, args in calls if op == DUAL_MAC_OP]
    assert len(macs) == 1 and [int(a) for a in macs[0][3:]] == [9, 9, 1, 9]  # x stride, w stride, rows, row_len
    copies = [args for op, args in calls if op == STATE_SHIFT_OP]  # the marked shift: the state shift's call
    shift = [args for args in copies if int(args[3]) == 2]  # the int16 state: 8 * 5 - 1 elements of 2 bytes
    assert len(shift) == 1 and int(shift[0][2]) == 39
    assert _product_blocks(scheduled) == 0


def test_a_remainder_of_filters_keeps_its_scalar_product() -> None:
    scheduled = inline_intermediates(_state_update(filters=7), 4, DUAL_MAC_SCHEDULES)
    assert sum(op == DUAL_MAC_OP for op, _ in _calls(scheduled)) == 1
    assert _product_blocks(scheduled) == 1  # the last three filters


def test_cores_without_dsp_keep_the_loops() -> None:
    func = _state_update(filters=8)
    assert inline_intermediates(func, 4, None).same_as(func)
    assert _calls(func) == [] and _product_blocks(func) == 1


# ------------------------------------------------------------------------- the time product (backends.cortex_m.schedules.row_dot)
def _output_stage(state_zero_point: int, dtype: str = "int8") -> tirx.PrimFunc:
    state = te.placeholder((1, 8 * 6), dtype, name="state")
    time = te.placeholder((8, 6), dtype, name="time")
    bias = te.placeholder((4,), "int32", name="bias")
    out = svdf_output(state, time, bias, rank=2, state_zero_point=state_zero_point, multiplier=1 << 30, shift=-3,
                      output_zero_point=0, rounding=Rounding.DOUBLE)
    return te.create_prim_func([state, time, bias, out])


def _row_dots(func: tirx.PrimFunc) -> list:
    return [[int(a) for a in node.args[3:]] for node in walk(func.body)
            if isinstance(node, tvm.ir.Call) and node.op.name == ROW_DOT_OP]


def test_dsp_time_product_of_a_folded_zero_point_calls_the_row_dot_product() -> None:
    """Four filters' rows of six state values and six time weights: strides 6 and 6, rows of 6."""
    assert _row_dots(inline_intermediates(_output_stage(0), 4, DUAL_MAC_SCHEDULES)) == [[6, 6, 6]]


@pytest.mark.parametrize("zero_point, dtype", [(5, "int8"), (0, "int16")])
def test_a_time_product_the_helper_cannot_compute_keeps_its_loop(zero_point: int, dtype: str) -> None:
    """A zero point left in the product, or int16 state (no SXTB16 pairs to make): no call."""
    assert _row_dots(inline_intermediates(_output_stage(zero_point, dtype), 4, DUAL_MAC_SCHEDULES)) == []


def _rows_output(weights: str, lanes: bool, length: int = 12) -> tirx.PrimFunc:
    state = te.placeholder((1, 3 * length), "int8", name="state")
    rows = te.placeholder((3, length), weights, name="rows")
    out = svdf_output_rows(state, rows, None, state_zero_point=0, multiplier=1 << 30, shift=-3, output_zero_point=0,
                           rounding=Rounding.DOUBLE, lanes=lanes)
    return extern_helper_calls(te.create_prim_func([state, rows, out]))


def _row_calls(func: tirx.PrimFunc) -> list:
    return [(node.op.name, int(node.args[3])) for node in walk(func.body)
            if isinstance(node, tvm.ir.Call) and node.op.name.startswith("tvm_ext.row_dot_s")]


def test_time_rows_call_the_one_row_dot_product_of_their_form() -> None:
    """A unit's row of int8 state against int8 weights, or against int16 weights in SXTB16's lane order (three loops:
    groups, then input pairs, then lanes): one call per unit of the helper of that form, the row's length."""
    assert _row_calls(_rows_output("int8", False)) == [(ROW_DOT1_OPS["int8"], 12)]
    assert _row_calls(_rows_output("int16", True)) == [(ROW_DOT_LANES_OP, 12)]


def test_interleaved_layout_tiles_agree_with_the_helpers_4x4_layout():
    # the kernels' tiles (the LSTM's GATE_TILE, the SVDF's FEATURE_TILE: extern_mac.INTERLEAVED_TILE) and the helper's
    # (INTERLEAVED_GROUP inputs of DUAL_MAC_CHANNELS channels): a mismatch would leave the interleaved products
    # unrecognized (the C loop instead of the helper) rather than fail
    assert GATE_TILE == FEATURE_TILE == INTERLEAVED_TILE == INTERLEAVED_GROUP == DUAL_MAC_CHANNELS == 4


def test_the_lane_order_rows_group_agrees_with_the_row_matcher():
    # the SVDF's time weights in SXTB16's lane order (extern_mac.lane_order) and the matcher's loop steps
    # (row_dot.LANE_STEPS): a mismatch would leave the lane-order rows unrecognized (the C loop) rather than fail
    assert MATCHER_LANE_GROUP == LANE_GROUP == 4


def _copy_nest(dst: tirx.Buffer, src: tirx.Buffer, src_index) -> tirx.For:
    """for i < 3: for j < 3: dst[i, j] = src[src_index] (of the loop variables `src_index` takes)."""
    i, j = tirx.Var("i", "int32"), tirx.Var("j", "int32")
    store = tirx.BufferStore(dst, tirx.BufferLoad(src, [src_index(i, j)]), [i, j])
    return tirx.For(i, 0, 3, tirx.ForKind.SERIAL, tirx.For(j, 0, 3, tirx.ForKind.SERIAL, store))


def test_the_transpose_matcher_takes_only_indices_affine_in_the_nest() -> None:
    """A 3 x 3 transpose is one call of the word transpose; a source index that agrees with a transpose's at the
    points the matcher measures its steps at ((0, 0), (1, 0), (0, 1) and the far corner) but not at (1, 1)
    (floormod(i * j, 4) is 0 at all four) keeps its loops."""
    dst = tirx.decl_buffer((3, 3), "int8", name="dst")
    src = tirx.decl_buffer((36,), "int8", name="src")
    transposed = _transpose_call(_copy_nest(dst, src, lambda i, j: j * 3 + i))
    assert isinstance(transposed, tirx.Evaluate) and transposed.value.op.name == TRANSPOSE_OP
    assert _transpose_call(_copy_nest(dst, src, lambda i, j: j * 3 + i + tirx.floormod(i * j, 4) * 9)) is None
    assert _transpose_call(_copy_nest(dst, src, lambda i, j: j * 3 + i + i * j * 9 - i * j * 9)) is None
