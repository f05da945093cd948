"""The integer LSTM's gate products (tvm_ext.kernels.lstm): each gate's input and recurrent products are
reduction blocks over tiles of four units, which a DSP core's schedules turn into dual MAC calls
(backends.cortex_m.schedules.extern_helpers) and the report counts as MACs (tvm_ext.plan.macs); a remainder of
fewer units keeps its scalar loop; the zero points are folded into per-unit offsets at compile time, and kept
in the product where a folded offset would not fit int32. Where the backend asks for interleaved weights (the
units and inputs padded to whole tiles and groups of four), each gate's product is one call of the interleaved
dual MAC over all of its tiles, its sums starting at the offsets; where it asks for whole gates in rows (Helium: the
units padded to whole tiles of four by zero rows), one call of the rows MAC likewise."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")
from tvm import te, tirx  # noqa: E402

from backends.cortex_m.schedules import DUAL_MAC_SCHEDULES, HELIUM_MAC_SCHEDULES  # noqa: E402
from backends.cortex_m.schedules.dual_mac import DUAL_MAC_OP  # noqa: E402
from backends.cortex_m.schedules.extern_helpers import (INTERLEAVED16_MAC_OP, INTERLEAVED_MAC_OP,  # noqa: E402
                                                       ROWS_MAC_OP)
from tvm_ext.kernels.extern_mac import rows_padded  # noqa: E402
from tvm_ext.kernels import Rounding  # noqa: E402
from tvm_ext.kernels.lstm import (LstmQuantization, gate_groups, gate_products, interleave_gate_weights,  # noqa: E402
                                  lstm_int8, lstm_params, signed_sigmoid_table, with_gate_multipliers)
from tvm_ext.plan.macs import count_macs  # noqa: E402
from tvm_ext.schedule.kernel_schedule import inline_intermediates  # noqa: E402
from tvm_ext.tir.tir_walk import walk  # noqa: E402

PRODUCT_BLOCKS = ("lstm_input_product", "lstm_recurrent_product")


def _params(input_zero_point: int = 3, hidden_zero_point: int = -21, input_weight_scales=(0.004,) * 4,
            recurrent_weight_scales=(0.0045,) * 4):
    quant = LstmQuantization(input_scale=1 / 128, input_zero_point=input_zero_point,
                             input_weight_scales=input_weight_scales, input_weight_zero_points=(0,) * 4,
                             recurrent_weight_scales=recurrent_weight_scales, recurrent_weight_zero_points=(0,) * 4,
                             hidden_scale=0.0047, hidden_zero_point=hidden_zero_point, cell_scale=2.0**-11)
    return lstm_params(quant, cell_clip=0.0, time_major=False, rounding=Rounding.DOUBLE)


def _lstm(units: int, depth: int = 6, steps: int = 3, batch: int = 2, bias_value: int = 1000,
          input_zero_point: int = 3, interleave: bool = False,
          weight_dtype: str = "int8", rows: bool = False) -> tuple[tirx.PrimFunc, np.ndarray]:
    """The kernel's function for random int8 weights (interleaved ones held as ``weight_dtype``: int16 where the
    lowering widens them; with ``rows`` whole gates in rows) and a constant bias, and its input offsets."""
    rng = np.random.default_rng(units)
    w_in = rng.integers(-128, 128, (4, units, depth)).astype(np.int8)
    w_rec = rng.integers(-128, 128, (4, units, units)).astype(np.int8)
    params = _params(input_zero_point)
    input_offsets, _, products = gate_products(np.full((4, units), bias_value, np.int32), w_in, w_rec, params,
                                               interleave, rows)
    if products.rows:
        w_in, w_rec = rows_padded(w_in), rows_padded(w_rec)
    if products.interleaved:
        w_in, w_rec = interleave_gate_weights(w_in), interleave_gate_weights(w_rec)
    weight_dtype = weight_dtype if products.interleaved else "int8"
    tensors = [te.placeholder(shape, dtype, name=name) for name, shape, dtype in (
        ("data", (batch, steps, depth), "int8"), ("hidden", (batch, units), "int8"),
        ("cell", (batch, units), "int16"), ("w_in", w_in.shape, weight_dtype), ("w_rec", w_rec.shape, weight_dtype),
        ("in_offsets", input_offsets.shape, "int32"), ("rec_offsets", input_offsets.shape, "int32"),
        ("table", (513,), "uint16"))]
    out = lstm_int8(*tensors, params=params, products=products)
    return te.create_prim_func([*tensors, out]), input_offsets


def _dual_macs(func: tirx.PrimFunc) -> list[list[int]]:
    """The sizes (x row stride, w channel stride, rows, row length) of each dual MAC call."""
    return [[int(a) for a in node.args[3:]] for node in walk(func.body)
            if isinstance(node, tvm.ir.Call) and node.op.name == DUAL_MAC_OP]


def _product_blocks(func: tirx.PrimFunc) -> int:
    return sum(1 for node in walk(func.body) if isinstance(node, tvm.s_tir.SBlock)
               and node.name_hint in PRODUCT_BLOCKS)


def test_dsp_gates_call_the_dual_mac_per_tile_of_four_units() -> None:
    """8 units: per gate one input call (rows of 6 inputs) and one recurrent call (rows of 8), no loop left."""
    scheduled = inline_intermediates(_lstm(units=8)[0], 4, DUAL_MAC_SCHEDULES)
    assert sorted(_dual_macs(scheduled)) == [[6, 6, 1, 6]] * 4 + [[8, 8, 1, 8]] * 4
    assert _product_blocks(scheduled) == 0


def test_a_remainder_of_units_keeps_its_scalar_products() -> None:
    scheduled = inline_intermediates(_lstm(units=7)[0], 4, DUAL_MAC_SCHEDULES)
    assert len(_dual_macs(scheduled)) == 8  # the first four units of each gate, both products
    assert _product_blocks(scheduled) == 8  # the last three units' two products per gate


@pytest.mark.parametrize("units, depth, steps, batch", [(8, 6, 3, 2), (7, 5, 4, 1), (1, 1, 2, 3)])
def test_every_gate_product_counts_as_macs(units: int, depth: int, steps: int, batch: int) -> None:
    """Four gates of an input and a recurrent product per unit, step and batch row."""
    func = _lstm(units, depth, steps, batch)[0]
    assert count_macs(func) == batch * steps * 4 * units * (depth + units)


def test_the_input_zero_point_is_folded_into_the_offsets() -> None:
    func, offsets = _lstm(units=4, bias_value=1000, input_zero_point=3)
    w_in = np.random.default_rng(4).integers(-128, 128, (4, 4, 6)).astype(np.int8)
    np.testing.assert_array_equal(offsets, 1000 - 3 * w_in.astype(np.int64).sum(axis=2))
    assert len(_dual_macs(inline_intermediates(func, 4, DUAL_MAC_SCHEDULES))) == 8


def test_an_offset_beyond_int32_keeps_the_zero_point_in_the_product() -> None:
    """A bias near INT32_MAX: the folded offset would overflow, so the input product subtracts the zero
    point itself (no dual MAC for it: the helper multiplies raw values); the recurrent product still folds."""
    func, _ = _lstm(units=4, bias_value=2**31 - 100, input_zero_point=-100)
    scheduled = inline_intermediates(func, 4, DUAL_MAC_SCHEDULES)
    assert _dual_macs(scheduled) == [[4, 4, 1, 4]] * 4
    assert count_macs(func) == 2 * 3 * 4 * 4 * (6 + 4)


def _interleaved_calls(func: tirx.PrimFunc, op: str = INTERLEAVED_MAC_OP) -> list[list[int]]:
    """The sizes (groups, tiles, weight tile stride) of each interleaved dual MAC call (of ``op``)."""
    return [[int(a) for a in node.args[4:]] for node in walk(func.body)
            if isinstance(node, tvm.ir.Call) and node.op.name == op]


def test_interleaved_gates_call_the_interleaved_dual_mac_once_per_gate_and_product() -> None:
    """8 units, 12 inputs: per gate one input call (3 groups, 2 tiles of 48 weights) and one recurrent call
    (2 groups, 2 tiles of 32), each from its offsets (no copy of them first), no dual MAC and no loop left."""
    func = _lstm(units=8, depth=12, interleave=True)[0]
    scheduled = inline_intermediates(func, 4, DUAL_MAC_SCHEDULES)
    assert sorted(_interleaved_calls(scheduled)) == [[2, 2, 32]] * 4 + [[3, 2, 48]] * 4
    assert _dual_macs(scheduled) == [] and _product_blocks(scheduled) == 0
    assert count_macs(func) == 2 * 3 * 4 * 8 * (12 + 8)


def test_int16_gate_weights_call_the_int16_interleaved_dual_mac() -> None:
    """The interleaved weights widened to int16 (the lowering's choice where the flash holds them): the same calls,
    of the int16 helper, strides in elements as before."""
    func = _lstm(units=8, depth=12, interleave=True, weight_dtype="int16")[0]
    scheduled = inline_intermediates(func, 4, DUAL_MAC_SCHEDULES)
    assert sorted(_interleaved_calls(scheduled, INTERLEAVED16_MAC_OP)) == [[2, 2, 32]] * 4 + [[3, 2, 48]] * 4
    assert _interleaved_calls(scheduled) == [] and _product_blocks(scheduled) == 0


@pytest.mark.parametrize("units, depth, calls", [(7, 8, [[2, 2, 32]] * 8), (8, 6, [[2, 2, 32]] * 8),
                                                 (5, 10, [[2, 2, 32]] * 4 + [[3, 2, 48]] * 4)])
def test_shapes_of_no_whole_tiles_and_groups_are_padded_to_them(units: int, depth: int, calls: list) -> None:
    """Units and inputs padded to whole tiles and groups (zero weights, zero-padded copies of the input row and
    hidden state): still one interleaved call per gate and product."""
    func = _lstm(units=units, depth=depth, interleave=True)[0]
    assert sorted(_interleaved_calls(inline_intermediates(func, 4, DUAL_MAC_SCHEDULES))) == sorted(calls)


def _rows_calls(func: tirx.PrimFunc) -> list[list[int]]:
    """The sizes (row length, rows) of each rows MAC call."""
    return [[int(a) for a in node.args[4:]] for node in walk(func.body)
            if isinstance(node, tvm.ir.Call) and node.op.name == ROWS_MAC_OP]


def test_whole_gates_in_rows_call_the_rows_mac_once_per_gate_and_product() -> None:
    """Helium, 7 units, 13 inputs: per gate one input call (rows of 13, 8 rows: the units padded to two tiles) and one
    recurrent call (rows of 7), each from its offsets, no dual MAC and no product loop left; the blocks count the
    padded rows' MACs too (the lowering marks the kernel with the layer's)."""
    func = _lstm(units=7, depth=13, rows=True)[0]
    scheduled = inline_intermediates(func, 4, HELIUM_MAC_SCHEDULES)
    assert sorted(_rows_calls(scheduled)) == [[7, 8]] * 4 + [[13, 8]] * 4
    assert _dual_macs(scheduled) == [] and _product_blocks(scheduled) == 0
    assert count_macs(func) == 2 * 3 * 4 * 8 * (13 + 7)


def test_whole_gates_need_the_zero_points_folded() -> None:
    """An input offset beyond int32 (its zero point kept in the product: the helper multiplies raw values): tiles of
    four units, no rows MAC."""
    func, _ = _lstm(units=4, bias_value=2**31 - 100, input_zero_point=-100, rows=True)
    assert _rows_calls(inline_intermediates(func, 4, HELIUM_MAC_SCHEDULES)) == []


@pytest.mark.parametrize("units, depth, rolled", [(8, 12, False), (5, 10, True), (7, 3, False), (1, 1, False)])
def test_the_interleaved_kernel_computes_what_the_row_major_one_does(units: int, depth: int, rolled: bool) -> None:
    """Built for the host (LLVM: the blocks' own loops, the sums starting at the offsets by the blocks' init, no
    helper), the three layouts (tiles of four units, interleaved, whole gates in rows), and with ``rolled`` the
    interleaved one with the gates of one form in one loop (RV32's, ``gate_groups``: each gate's multipliers, all
    different here, read from its offsets' rows), give the same outputs and states over several steps and batch rows,
    shapes padded to whole tiles and groups included."""
    params = _params(input_weight_scales=(0.004, 0.0047, 0.0043, 0.0051),
                     recurrent_weight_scales=(0.0045, 0.0052, 0.0039, 0.0041))
    steps, batch = 3, 2
    rng = np.random.default_rng(0)
    w_in = rng.integers(-128, 128, (4, units, depth)).astype(np.int8)
    w_rec = rng.integers(-128, 128, (4, units, units)).astype(np.int8)
    bias = rng.integers(-5000, 5000, (4, units)).astype(np.int32)
    data = rng.integers(-128, 128, (batch, steps, depth)).astype(np.int8)
    hidden = rng.integers(-128, 128, (batch, units)).astype(np.int8)
    cell = rng.integers(-3000, 3000, (batch, units)).astype(np.int16)
    results = []
    for interleave, rows, roll in ((False, False, False), (True, False, False), (False, True, False),
                                   *(((True, False, True),) if rolled else ())):
        in_offsets, rec_offsets, products = gate_products(bias, w_in, w_rec, params, interleave, rows)
        assert (products.interleaved, products.rows) == (interleave, rows)
        if roll:
            products = dataclasses.replace(products, rolled=True)
            assert gate_groups(params, products) == ((0, 1, 3), (2,))  # the sigmoids, then the cell gate's tanh
            in_offsets = with_gate_multipliers(in_offsets, params, "input_fc")
            rec_offsets = with_gate_multipliers(rec_offsets, params, "recurrent_fc")
        weights = (interleave_gate_weights(w_in), interleave_gate_weights(w_rec)) if interleave \
            else (rows_padded(w_in), rows_padded(w_rec)) if rows else (w_in, w_rec)
        arrays = [data, hidden, cell, *weights, in_offsets, rec_offsets, signed_sigmoid_table()]
        tensors = [te.placeholder(a.shape, str(a.dtype)) for a in arrays]
        out = lstm_int8(*tensors, params=params, products=products)
        built = tvm.compile(te.create_prim_func([*tensors, out]), target="llvm")
        args = [tvm.runtime.tensor(a) for a in (*arrays, np.zeros((batch, steps, units), np.int8))]
        built(*args)
        results.append([args[k].numpy() for k in (-1, 1, 2)])  # output, hidden and cell states
    for row_major, *others in zip(*results):
        for other in others:
            np.testing.assert_array_equal(other, row_major)
