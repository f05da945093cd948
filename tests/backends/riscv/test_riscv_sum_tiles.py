"""RV32's reductions without products (a MEAN's sums) take the tile of eight channels only where the loop steps it
shares pay its code at the one price of code (`backends.riscv.schedules.SUM_TILE_MIN_STEPS`); below, their scalar
loop nest stays."""

from __future__ import annotations

from tvm import te, tirx

from backends.riscv.schedules import RISCV_MAC_SCHEDULES, SUM_TILE_MIN_STEPS
from backends.riscv.helpers import MAC_CHANNELS
from tvm_ext.kernels import Rounding
from tvm_ext.kernels.reduce import mean_or_sum_int8
from tvm_ext.schedule.kernel_schedule import inline_intermediates
from tvm_ext.tir.tir_walk import walk


def _mean_over_rows(rows: int, channels: int) -> tirx.PrimFunc:
    """A MEAN over the rows of an int8 [1, rows, channels] tensor (rows a multiple of four: steps of four rows)."""
    data = te.placeholder((1, rows, channels), "int8", name="data")
    out = mean_or_sum_int8(data, axes=[1], keepdims=False, input_zero_point=-3, output_zero_point=6,
                           multiplier=1 << 30, shift=-4, rounding=Rounding.DOUBLE)
    return te.create_prim_func([data, out])


def _unrolled_channel_tile(func: tirx.PrimFunc) -> bool:
    """Whether a loop of MAC_CHANNELS iterations is unrolled in ``func`` (the tile's channels)."""
    return any(isinstance(node, tirx.For) and node.kind == tirx.ForKind.UNROLLED and int(node.extent) == MAC_CHANNELS
               for node in walk(func.body))


def test_a_small_mean_keeps_its_scalar_loops() -> None:
    """vit5h_d40_24's MEAN over 36 rows of 40 channels: 40 outputs of 9 steps, below the price."""
    assert 40 * 9 < SUM_TILE_MIN_STEPS
    assert not _unrolled_channel_tile(inline_intermediates(_mean_over_rows(36, 40), MAC_CHANNELS,
                                                           RISCV_MAC_SCHEDULES))


def test_a_large_mean_takes_the_channel_tile() -> None:
    """A MEAN over 400 rows of 400 channels: 400 outputs of 100 steps, above the price."""
    assert 400 * 100 >= SUM_TILE_MIN_STEPS
    assert _unrolled_channel_tile(inline_intermediates(_mean_over_rows(400, 400), MAC_CHANNELS, RISCV_MAC_SCHEDULES))
