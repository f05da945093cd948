"""The DSP cores' two-pixel depthwise tiles (backends/cortex_m/schedules/depthwise_pairs.py, the helper
backends/cortex_m/helpers/templates/depthwise_pair.h.in): the window as the helper runs it (its columns as rows where the
second pixel is one row on), what a pair saves and costs at the one code price, and on cortex-m4f a
large 3x3 layer's interior pixels two per call, bit for bit with TFLite Micro under QEMU mps2-an386 and on the
host (the helper's portable C), where a small layer keeps one pixel per call (stepping its tiles' pointers where
that pays: depthwise_tiles.h.in's _depthwise_tiles_stepped_s8x4w16)."""

from __future__ import annotations

import re

import pytest

from backends.code_price import INSTRUCTIONS_PER_BYTE
from backends.cortex_m.schedules.depthwise_pairs import PAIR_COST, STEPPED_COST, fits, pair_form


def _sizes(rows: int, cols: int, x_row: int, x_col: int, w_row: int, w_col: int, channels: int) -> dict:
    return {"rows": rows, "cols": cols, "x_row_stride": x_row, "x_col_stride": x_col, "w_row_stride": w_row,
            "w_col_stride": w_col, "channels": channels}


def test_the_window_runs_its_columns_as_rows_where_the_second_pixel_is_one_row_on():
    kws = _sizes(3, 3, 320, 64, 192, 64, 64)  # kws_ref_model's 3x3 layer on 25x5x64
    assert pair_form(kws, 64) == (3, 3)  # one column on
    assert pair_form(kws, 320) == (3, 3)  # one row on: the columns as rows
    assert pair_form(_sizes(3, 1, 64, 64, 64, 64, 64), 64) == (3, 1)  # 3x1 one column on: as it is
    assert pair_form(_sizes(3, 1, 64, 8, 64, 64, 64), 64) == (1, 3)  # 3x1 one row on: the columns as rows
    assert pair_form(kws, 128) == (3, 3)  # stride 2
    assert pair_form(_sizes(1, 10, 128, 128, 128, 128, 128), 128) == (1, 10)  # a 10x1 time-axis layer
    # the assembly block's immediates: an input 4,096 bytes on, weights 1,200 bytes a tap
    assert pair_form(kws, 4096) is None
    assert pair_form(_sizes(3, 3, 1800, 600, 1800, 600, 600), 600) is None
    assert not fits(3, 3, 70_000, 16, 48, 16, 16) and fits(3, 3, 5000, 16, 48, 16, 16)


def test_a_pair_saves_what_was_measured_and_pays_only_over_enough_tiles():
    # a 3x3 window over 25x5x64 on cortex-m4f, one tile of four channels (static count): two one-pixel tiles 277
    # instructions, a pair's 256 (the twelve-register block: shared columns or not the same)
    assert PAIR_COST.saved(3, 3, rolled=False) == 277 - 256
    added = PAIR_COST.bytes_added(3, 3, rolled=False, replaces_single=False)
    assert PAIR_COST.bytes_added(3, 3, rolled=True, replaces_single=False) < added
    # pays from about 5,700 pair tiles on (efficientnet_lite_w030_112_int8's 56x56x16 layer: 1,512 pairs x 4 tiles)
    tiles = -(-added * INSTRUCTIONS_PER_BYTE // PAIR_COST.saved(3, 3, rolled=False))
    assert 1_000 < tiles < 4 * 1_512


def test_the_stepped_tiles_pay_over_enough_interior_tiles_of_a_narrow_window_only():
    # cortex-m4f, measured: kws_ref_model's 3x3 layer on 25x5x64 (69 interior pixels of 16 tiles) pays;
    # str_ww_ref_model's 3x1 one on 28x1x40 (28 pixels of 10 tiles, 2,154 instructions saved) does not pay for its
    # 22 B; a 5x5 window never (its pointers spill among its taps)
    assert STEPPED_COST.pays(9, 69 * 16, INSTRUCTIONS_PER_BYTE)
    assert not STEPPED_COST.pays(3, 28 * 10, INSTRUCTIONS_PER_BYTE)
    assert not STEPPED_COST.pays(25, 100_000, INSTRUCTIONS_PER_BYTE)
    assert STEPPED_COST.pays(3, 28 * 10, INSTRUCTIONS_PER_BYTE // 4)  # the price decides, not the shape


pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from emulator.tools import missing_tools  # noqa: E402
from test_depthwise_border_regions import SAME  # noqa: E402
from test_depthwise_border_regions import _depthwise_model as _border_model  # noqa: E402
from test_requantize_epilogue import bit_exact_bundle, host_selftest_passes  # noqa: E402


@pytest.mark.slow
@pytest.mark.skipif(bool(missing_tools()), reason="needs arm-none-eabi-gcc and qemu-system-arm")
def test_the_stepped_tiles_count_every_call_of_a_kernel_and_stay_bit_exact(tmp_path):
    # one int8 input [1, 12, 12, 16] through two 3x3 SAME depthwise layers of one shape: one kernel (the bundle's one C
    # function for both), 100 interior pixels of 4 tiles a call, 2,800 instructions saved a call for some 40 B (not
    # paying once), 5,600 for the two calls (paying); one such layer alone keeps the indexed call
    for name, cases, stepped in (("twice", [(3, 1, 1, SAME)] * 2, True), ("once", [(3, 1, 1, SAME)], False)):
        model = _border_model(16, 5, (12, 12), cases)
        (tmp_path / name).mkdir()
        _bundle, kernels = bit_exact_bundle(tmp_path / name, name, model, "cortex-m4f", "mps2-an386")
        bodies = re.split(r"\n(?=void )", kernels)
        depthwise = [body for body in bodies if re.match(r"void \w+_depthwise_conv_2d_3x3_s1", body)]
        assert len(depthwise) == 1, kernels
        assert ("_depthwise_tiles_stepped_s8x4w16" in depthwise[0]) == stepped, depthwise[0]
        assert re.search(r"_depthwise_tiles(_stepped)?_s8x4w16(_b16)?\(", depthwise[0]), depthwise[0]


def _stride_one_and_two_bundle(tmp_path, name: str, image: tuple[int, int], five: bool = False):
    """(the cortex-m4f bundle, bit-exact under QEMU, of one int8 [1, rows, cols, 16] input through a 3x3 SAME
    depthwise layer at stride 1 and one at stride 2, and where `five` a 5x5 SAME one at stride 1, each kernel's C by
    "3x3_s1" / "3x3_s2" / "5x5_s1")."""
    model = _border_model(16, 11, image, [(3, 1, 1, SAME), (3, 1, 2, SAME)] + ([(5, 1, 1, SAME)] if five else []))
    bundle, kernels = bit_exact_bundle(tmp_path, name, model, "cortex-m4f", "mps2-an386")
    by_kernel = {layer: kernel for kernel in re.split(r"\n(?=void )", kernels)
                 for layer in re.findall(r"^void \w+_depthwise_conv_2d_(\dx\d_s\d)", kernel)}
    assert set(by_kernel) == {"3x3_s1", "3x3_s2"} | ({"5x5_s1"} if five else set()), kernels
    return bundle, by_kernel


@pytest.mark.slow
@pytest.mark.skipif(bool(missing_tools()), reason="needs arm-none-eabi-gcc and qemu-system-arm")
def test_a_large_depthwise_layer_runs_two_interior_pixels_a_call_and_stays_bit_exact(tmp_path):
    # one int8 input [1, 18, 200, 16]: a 3x3 SAME layer (3,168 interior pixels of 4 tiles: pairs pay; its rows too
    # wide for the channel rows' band, depthwise_rows.rows_band_bytes) and a 3x3 SAME one at stride 2 (9x100 outputs,
    # 792 interior: too few to pay for the pair's code)
    bundle, by_kernel = _stride_one_and_two_bundle(tmp_path, "pairs", (18, 200))
    # the stride-1 layer: pairs one pixel (16 channels) apart, the rows written out, beside the one-pixel call
    assert re.search(r"_depthwise_pair_s8x4w16(?:_b16)?\(.*, 3, 3, 16, (16|3200), (16|3200), 0\);", by_kernel["3x3_s1"])
    assert "_depthwise_tiles_s8x4w16" in by_kernel["3x3_s1"]
    assert "_depthwise_pair_" not in by_kernel["3x3_s2"]
    # its one-pixel call stepping its tiles' pointers (792 interior pixels of 4 tiles pay for that code); the
    # stride-1 layer's one-pixel call (its pixels left out of pairs) as it was
    assert "_depthwise_tiles_stepped_s8x4w16" in by_kernel["3x3_s2"]
    assert "_depthwise_tiles_stepped_" not in by_kernel["3x3_s1"]
    host_selftest_passes(bundle.out_dir)


@pytest.mark.slow
@pytest.mark.skipif(bool(missing_tools()), reason="needs arm-none-eabi-gcc and qemu-system-arm")
def test_depthwise_layers_over_a_large_image_run_as_channel_rows_and_stay_bit_exact(tmp_path):
    # one int8 input [1, 64, 64, 16]: a 3x3 SAME layer, one call of the channel rows (depthwise_rows: faster than the
    # tiles and their pairs there), a 3x3 SAME one at stride 2 (its input's widening too dear: the tiles), and a 5x5
    # SAME one, one call of the rows of any window (their quads: faster than the tiles there)
    bundle, by_kernel = _stride_one_and_two_bundle(tmp_path, "rows", (64, 64), five=True)
    # the weights as they are (1 byte: the rows read int8, the lowering keeps them so), the padding's value the
    # input's zero point (-3), 64 rows of 1,024 elements, 16 channels, pitch 68
    rows_call = r"_depthwise_rows3x3_s8\([^,]+, [^,]+, [^,]+, 1, .*, -3, 64, 1024, 16, 64, 1024, 1, 1, 68, 1, 1, 3\);"
    assert re.search(rows_call, by_kernel["3x3_s1"]), by_kernel["3x3_s1"]
    assert "_depthwise_tiles" not in by_kernel["3x3_s1"] and "_depthwise_pair_" not in by_kernel["3x3_s1"]
    assert "_depthwise_rows" not in by_kernel["3x3_s2"] and "_depthwise_tiles" in by_kernel["3x3_s2"]
    # the 5x5 window: int8 weights, pitch 70 (the last quad's pairs reach column 68), a ring of 5 rows, 5x5
    any_call = r"_depthwise_rows_s8\([^,]+, [^,]+, [^,]+, 1, .*, -3, 64, 1024, 16, 64, 1024, 2, 2, 70, 1, 1, 5, 5, 5\);"
    assert re.search(any_call, by_kernel["5x5_s1"]), by_kernel["5x5_s1"]
    assert "_depthwise_tiles" not in by_kernel["5x5_s1"]
    host_selftest_passes(bundle.out_dir)
