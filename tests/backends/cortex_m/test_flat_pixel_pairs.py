"""Pixel pairs across output rows (backends/cortex_m/schedules/flat_pixels.py): a convolution whose windows lie evenly along
the fused pixel index (1x1, stride 1, unpadded: a matrix multiply over rows x columns pixels) pairs its
pixels over that index, so an odd row width no longer leaves one pixel per row alone (kws's 25 x 5 1x1
convolutions: 62 pairs and one lone pixel, not 25 lone pixels). Checked in the scheduled TIR (the pixel
loop's extent, the pixels that run alone, which kernels keep their rows) and bit-exactly against TFLite
Micro under QEMU on cortex-m4f.
"""

from __future__ import annotations

import numpy as np
import pytest
from tvm import ir, tirx
from tvm.sym import Analyzer

from test_dual_mac_pixels import ONE_PIXEL, TWO_PIXELS, WIDENED_PAIR, _helper_calls, _scheduled_conv
from tvm_ext.tir.tir_walk import children


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
