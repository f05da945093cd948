"""RV32's MAC loop nests inside a TE extern stage (an LSTM's gate products, an SVDF's feature product) as calls of
the bundle's out-of-line four-channel window MAC (`backends.riscv.schedules.mac.extern_mac_calls`), where each kept
its own copy of TVM's loops; a window shorter than the helper takes (MIN_REDUCTION) keeps them. Over interleaved
weights (RV32 asks for them) every tile's product is one call of the interleaved MAC
(`backends.riscv.schedules.mac.interleaved_mac_calls`); its constant rescales, where a chain of them, are calls of the
biased requantization."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import tvm
from tvm import te, tirx

from backends.cortex_m.schedules.biased_requantize import REQUANTIZE_BIASED_OP, REQUANTIZE_BIASED_S8_OP
from backends.riscv.schedules import RISCV_MAC_SCHEDULES, kernel_schedules
from backends.riscv.schedules.mac import INTERLEAVED_MAC_OP, MAC4_OP, MIN_REDUCTION
from packager.fixed_point_c import REQUANTIZE_OPS, SMALL_RIGHT_SHIFT
from tvm_ext.kernels import Rounding
from backends.code_price import INSTRUCTIONS_PER_BYTE
from tvm_ext.kernels.lstm import (LstmQuantization, gate_products, interleave_gate_weights, lstm_int8, lstm_params,
                                  with_gate_multipliers)
from tvm_ext.transform.int8.lstm import ROLLED_GATE_EXTRA, rolls_gates
from tvm_ext.kernels.svdf import svdf_state_update
from tvm_ext.schedule.kernel_schedule import inline_intermediates
from target.resolve import resolve_profile
from tvm_ext.tir.tir_walk import walk


def _state_update(filters: int, depth: int, interleaved: bool = False) -> tirx.PrimFunc:
    """An SVDF state update (one TE extern stage) of ``filters`` filters over ``depth`` int8 inputs (whole tiles and
    groups of four where ``interleaved``: its weights in the interleaved layout)."""
    data = te.placeholder((2, depth), "int8", name="data")
    state = te.placeholder((2, filters * 5), "int16", name="state")
    shape = (filters // 4, depth // 4, 4, 4) if interleaved else (filters, depth)
    weights = te.placeholder(shape, "int8", name="weights")
    offsets = te.placeholder((filters,), "int32", name="offsets")
    out = svdf_state_update(data, state, weights, offsets, memory=5, state_zero_point=0, multiplier=1 << 30,
                            shift=-3, rounding=Rounding.DOUBLE, interleaved=interleaved)
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


def test_an_interleaved_product_of_every_tile_is_one_call_of_the_interleaved_mac() -> None:
    """Twelve filters over sixteen inputs in the interleaved layout: one call (groups 4, tiles 3, a tile's weights
    64 apart), no four-channel MAC call and no loop of tiles left; RV32 asks for the layout."""
    scheduled = inline_intermediates(_state_update(filters=12, depth=16, interleaved=True), 8, RISCV_MAC_SCHEDULES)
    calls = [node for node in walk(scheduled.body) if isinstance(node, tvm.ir.Call)
             and node.op.name in (INTERLEAVED_MAC_OP, MAC4_OP)]
    assert [(call.op.name, [int(arg) for arg in call.args[4:]]) for call in calls] == [(INTERLEAVED_MAC_OP, [4, 3, 64])]
    assert kernel_schedules(resolve_profile("rv32imc")).interleaved_gate_weights


def test_an_extern_stage_product_shorter_than_the_helper_takes_keeps_its_loops() -> None:
    scheduled = inline_intermediates(_state_update(filters=8, depth=MIN_REDUCTION - 1), 8, RISCV_MAC_SCHEDULES)
    assert _mac4_sizes(scheduled) == []


def test_an_svdf_time_product_is_written_unit_after_unit_on_rv32() -> None:
    """RV32 names both SVDF state types for the unit rows' extern stage (one scalar row loop and one accumulator per
    unit, not the TE compute's tile of eight unrolled sums: keyword_scrambled's and keyword_scrambled_8bit's code
    below cortex-m4f's), up to the MACs whose instructions the code saved pays at the one price of code (220 B:
    22,000 instructions, 2.4 more a MAC)."""
    schedules = kernel_schedules(resolve_profile("rv32imc"))
    assert schedules.svdf_unit_rows == ("int8", "int16")
    assert schedules.svdf_unit_rows_max_macs == 9166


@pytest.mark.parametrize("rolled", [False, True])
def test_an_lstm_stage_rescales_through_the_biased_requantization(rolled: bool) -> None:
    """An integer LSTM (one TE extern stage, 8 units over 12 inputs, interleaved weights as RV32 asks): its gates'
    constant rescales are calls of the biased requantization (`biased_requantize`, a chain of at least two; rv32imc
    kws_lstm_40x16_int8 2,322 -> 2,292 B of code, 7,076,517 -> 7,068,836 instructions), none of the scalar helper;
    so are those of its three sigmoid gates in one loop (`rolled`, `tvm_ext.kernels.lstm.gate_groups`), whose
    multipliers the loop reads from its offsets: two loops of gates, one call of the interleaved MAC per loop and
    product, two requantizations per loop with a multiplier read at run time."""
    rng = np.random.default_rng(8)
    w_in = rng.integers(-128, 128, (4, 8, 12)).astype(np.int8)
    w_rec = rng.integers(-128, 128, (4, 8, 8)).astype(np.int8)
    quant = LstmQuantization(input_scale=1 / 128, input_zero_point=3, input_weight_scales=(0.004,) * 4,
                             input_weight_zero_points=(0,) * 4, recurrent_weight_scales=(0.0045,) * 4,
                             recurrent_weight_zero_points=(0,) * 4, hidden_scale=0.0047, hidden_zero_point=-21,
                             cell_scale=2.0**-11)
    params = lstm_params(quant, cell_clip=0.0, time_major=False, rounding=Rounding.DOUBLE)
    offsets, _, products = gate_products(np.full((4, 8), 1000, np.int32), w_in, w_rec, params, True, False)
    if rolled:
        products = dataclasses.replace(products, rolled=True)
        offsets = with_gate_multipliers(offsets, params, "input_fc")
    w_in, w_rec = interleave_gate_weights(w_in), interleave_gate_weights(w_rec)
    tensors = [te.placeholder(shape, dtype, name=name) for name, shape, dtype in (
        ("data", (1, 3, 12), "int8"), ("hidden", (1, 8), "int8"), ("cell", (1, 8), "int16"),
        ("w_in", w_in.shape, "int8"), ("w_rec", w_rec.shape, "int8"), ("in_offsets", offsets.shape, "int32"),
        ("rec_offsets", offsets.shape, "int32"), ("table", (513,), "uint16"))]
    func = te.create_prim_func([*tensors, lstm_int8(*tensors, params=params, products=products)])
    calls = [node for node in walk(inline_intermediates(func, 8, RISCV_MAC_SCHEDULES).body)
             if isinstance(node, tvm.ir.Call) and isinstance(node.op, tvm.ir.Op)]
    ops = [call.op.name for call in calls]
    assert ops.count(REQUANTIZE_BIASED_OP) + ops.count(REQUANTIZE_BIASED_S8_OP) >= 2, ops
    assert REQUANTIZE_OPS[SMALL_RIGHT_SHIFT] not in ops, ops
    assert ops.count(INTERLEAVED_MAC_OP) == (4 if rolled else 8), ops
    read = [call for call in calls
            if call.op.name == REQUANTIZE_BIASED_OP and not isinstance(call.args[1], tirx.IntImm)]
    assert len(read) == (2 if rolled else 0), read


def test_rv32_rolls_an_lstm_s_sigmoid_gates_where_the_code_saved_pays() -> None:
    """RV32 rolls an LSTM's three sigmoid gates into one loop (`tvm_ext.transform.int8.lstm.rolls_gates`): two gate
    loops of GATE_LOOP_BYTES saved pay ROLLED_GATE_EXTRA instructions a gate a step at the price of code for a
    keyword spotter's 37 or 40 steps, not for thousands; a core that gives no gate loop's bytes never rolls."""
    quant = LstmQuantization(input_scale=1 / 128, input_zero_point=3, input_weight_scales=(0.004,) * 4,
                             input_weight_zero_points=(0,) * 4, recurrent_weight_scales=(0.0045,) * 4,
                             recurrent_weight_zero_points=(0,) * 4, hidden_scale=0.0047, hidden_zero_point=-21,
                             cell_scale=2.0**-11)
    params = lstm_params(quant, cell_clip=0.0, time_major=False, rounding=Rounding.DOUBLE)
    w_in, w_rec = np.ones((4, 8, 12), np.int8), np.ones((4, 8, 8), np.int8)
    _, _, products = gate_products(np.zeros((4, 8), np.int32), w_in, w_rec, params, True, False)
    gate_bytes = kernel_schedules(resolve_profile("rv32imc")).gate_loop_bytes
    breakeven = 2 * gate_bytes * INSTRUCTIONS_PER_BYTE // (3 * ROLLED_GATE_EXTRA)
    assert rolls_gates(params, products, gate_bytes, 37) and rolls_gates(params, products, gate_bytes, breakeven - 1)
    assert not rolls_gates(params, products, gate_bytes, breakeven + 1)
    assert not rolls_gates(params, products, 0, 37)
