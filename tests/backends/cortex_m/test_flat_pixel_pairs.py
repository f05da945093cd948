"""Pixel pairs across output rows (backends/cortex_m/schedules/flat_pixels.py): a convolution whose windows lie evenly along
the fused pixel index (1x1, stride 1, unpadded: a matrix multiply over rows x columns pixels) pairs its
pixels over that index, so an odd row width no longer leaves one pixel per row alone (kws's 25 x 5 1x1
convolutions: 62 pairs and one lone pixel, not 25 lone pixels). Checked in the scheduled TIR (the pixel
loop's extent, the pixels that run alone, which kernels keep their rows) and bit-exactly against TFLite
Micro under QEMU on cortex-m4f; an epilogue whose loops also compute a PAD keeps the convolution's rows.
"""

from __future__ import annotations

import numpy as np
import pytest
from tvm import ir, te, tirx
from tvm.sym import Analyzer

from backends.cortex_m.schedules import DUAL_MAC_SCHEDULES, HELIUM_MAC_SCHEDULES
from backends.riscv.schedules import RISCV_MAC_SCHEDULES
from test_dual_mac_pixels import ONE_PIXEL, TWO_PIXELS, WIDENED_PAIR, _helper_calls, _scheduled_conv
from tvm_ext.kernels.conv import WeightLayout, conv2d_int8
from tvm_ext.kernels.fixed_point import Rounding
from tvm_ext.kernels.quant_params import ActivationRange
from tvm_ext.kernels.requantize import OutputStage
from tvm_ext.schedule.kernel_schedule import inline_intermediates
from tvm_ext.tir.tir_walk import children, walk


def _loops_around(node, op: str, loops: tuple = ()) -> tuple[tirx.For, ...]:
    """The For loops from ``node`` down to the first call of ``op`` (empty: no call)."""
    if isinstance(node, ir.Call) and node.op.name == op:
        return loops
    inner = (*loops, node) if isinstance(node, tirx.For) else loops
    return next((found for found in (_loops_around(child, op, inner) for child in children(node)) if found), ())


def _lone_pixels(func: tirx.PrimFunc) -> int:
    """How many pixels of the image run on their own: the iterations of the paired pixel loop that neither
    start a pair (``if (starts) {pair} else if (!ends) {pixel}``, backends.cortex_m.schedules.pixel_pairs) nor end one, times
    the iterations of the loops around it (the rows, where each row has a pixel loop)."""
    *outer, pixel_loop, _ = _loops_around(func.body, WIDENED_PAIR)  # ..., the pixels, the channel tiles
    branch = pixel_loop.body
    assert isinstance(branch, tirx.IfThenElse) and isinstance(branch.else_case, tirx.IfThenElse)
    lone = 0
    for pixel in range(int(pixel_loop.min), int(pixel_loop.min) + int(pixel_loop.extent)):
        analyzer = Analyzer()
        analyzer.bind(pixel_loop.loop_var, ir.Range.from_min_extent(pixel, 1))
        starts = analyzer.can_prove(branch.condition)
        alone = analyzer.can_prove(branch.else_case.condition)
        lone += not starts and alone
    return lone * int(np.prod([int(loop.extent) for loop in outer]))


def test_odd_rows_of_a_1x1_convolution_pair_over_the_fused_pixel_index():
    """kws's shape: 25 rows of 5 columns on 64 channels. One pixel loop of 125 (it was 25 rows of 5
    columns), one lone pixel (it was 25: the fifth column of every row)."""
    func = _scheduled_conv((25, 5), 64, (1, 1))
    assert _lone_pixels(func) == 1
    assert [int(loop.extent) for loop in _loops_around(func.body, WIDENED_PAIR)] == [1, 125, 2]  # batch, pixels, tiles
    calls = _helper_calls(func.body)
    assert [name for name, _ in calls] == [WIDENED_PAIR, ONE_PIXEL]


def test_an_even_pixel_count_over_odd_rows_runs_only_pairs():
    """4 rows of 5 columns: 20 pixels, every one in a pair (the schedule's split by two now divides them):
    no one-pixel call left."""
    func = _scheduled_conv((4, 5), 37, (1, 1))
    assert [name for name, _ in _helper_calls(func.body)] == [TWO_PIXELS]


def test_windows_not_evenly_spaced_across_rows_keep_their_rows():
    """A 3x3 window on a 5x5 image (3 output columns): the next row's first window is not one column
    stride after the previous row's last, so its pixels pair per row as before (a pixel loop per row)."""
    func = _scheduled_conv((5, 5), 16, (3, 3))
    loops = _loops_around(func.body, WIDENED_PAIR)
    assert [int(loop.extent) for loop in loops] == [1, 3, 3, 2]  # batch, rows, columns, channel tiles
    assert _lone_pixels(func) == 3  # the third column of each row


def test_helium_runs_even_rows_of_a_1x1_convolution_as_one_pixel_loop():
    """Helium's one-row windows run pixel by pixel through the fused channel tiles (`conv_tiles.pays_two_pixels`), so
    its schedules fuse the rows of any column count (`flatten_odd_pixel_rows` without odd_only): 4 rows of 8 columns
    one loop of 32 pixels, where the row loop around the column loop cost mobilenet_v2_050_64_int8's 1x1 kernels on
    cortex-m55 58 B each (316 -> 258 B); a DSP core keeps its rows (their pairs leave no pixel alone)."""
    helium = _scheduled_conv((4, 8), 16, (1, 1), schedules=HELIUM_MAC_SCHEDULES)
    assert [int(loop.extent) for loop in _loops_around(helium.body, ONE_PIXEL)] == [1, 32, 2]  # batch, pixels, tiles
    dsp = _scheduled_conv((4, 8), 16, (1, 1))
    assert [int(loop.extent) for loop in _loops_around(dsp.body, ONE_PIXEL)] == [1, 4, 8, 2]


def _conv_then_pad(schedules, channel_tile: int) -> tirx.PrimFunc:
    """MobileNetV1's last stride-2 step at 80x80 inputs: a 1x1 int8 CONV_2D on 5x5 pixels (odd columns), its
    output padded by one row and column (the PAD before the stride-2 depthwise) in the same function, scheduled
    with a core's MAC schedules and tile."""
    data = te.placeholder((1, 5, 5, 16), "int8", name="data")
    weight = te.placeholder((8, 1, 1, 16), "int8", name="weight")
    bias = te.placeholder((8,), "int32", name="bias")
    stage = OutputStage(1 << 30, 0, 5, ActivationRange(-128, 127), next(iter(Rounding)))
    conv = conv2d_int8(data, weight, bias, input_zero_point=-3, output=stage, strides=(1, 1), padding=(0, 0, 0, 0),
                       dilation=(1, 1), zero_point_in_bias=True, weight_layout=WeightLayout.OHWI)
    padded = te.compute((1, 6, 6, 8), lambda b, y, x, c: tirx.if_then_else(
        tirx.all(y < 5, x < 5), conv[b, y, x, c], tirx.const(-128, "int8")), name="PadInput")
    return inline_intermediates(te.create_prim_func([data, weight, bias, padded]), channel_tile, schedules)


@pytest.mark.parametrize("schedules, channel_tile, helper", [
    (DUAL_MAC_SCHEDULES, 4, ONE_PIXEL), (HELIUM_MAC_SCHEDULES, 4, ONE_PIXEL),
    (RISCV_MAC_SCHEDULES, 8, "tvm_ext.riscv_mac_s8x8")], ids=["dsp", "helium", "riscv"])
def test_an_epilogue_whose_loops_also_pad_keeps_the_rows(schedules, channel_tile, helper):
    """The epilogue's loops are the PAD's too, so they cannot iterate by the fused pixel: the convolution keeps its
    5 rows of 5 columns and its MAC helper call. Fusing the reduction's pixels before the epilogue refused left
    the scheduler with loops that no longer existed (mobilenet_v1 alpha 0.3 at 80x80 on cortex-m55 and rv32imc:
    internal error "The loop no longer exists in the IRModule")."""
    func = _conv_then_pad(schedules, channel_tile)
    calls = [call for call in walk(func.body) if isinstance(call, ir.Call) and call.op.name == helper]
    assert calls
    assert [int(loop.extent) for loop in _loops_around(func.body, helper)][:3] == [1, 5, 5]  # batch, rows, columns


pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from test_dual_mac import bit_exact_on_cortex_m4f  # noqa: E402
from test_stream_order_pixel_pairs import _conv_1x1_model  # noqa: E402


@pytest.mark.slow
@pytest.mark.parametrize("rows, columns, pixel_loop", [(5, 3, 15), (4, 5, 10)])
def test_pairs_across_rows_are_bit_exact_on_cortex_m4f(tmp_path, rows, columns, pixel_loop):
    """15 pixels in rows of 3 (one loop over them: pairs across rows, the last pixel alone) and 20 in rows of
    5 (one loop over 10 pairs), on 35 input channels (eight words and three bytes), 12 output channels."""
    board = bit_exact_on_cortex_m4f(tmp_path, f"conv_{rows}x{columns}", _conv_1x1_model(rows, columns, 35, 12, 41))
    kernels = (board.out_dir / f"{board.plan.model}_kernels.c").read_text()
    # pairs: widened, int8, or their channel tiles fused (backends.cortex_m.schedules.pair_tiles)
    assert any(call in kernels for call in ("dual_mac_q15x2x4(", "dual_mac_s8x2x4(", "_pair_tiles_s8"))
    assert f"< {pixel_loop}; " in kernels  # over the whole image, not per row
