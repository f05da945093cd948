"""The fast int8 DEPTHWISE_CONV_2D of DSP cores (issue 16): the padded border cut into rectangles of pixels
that read the same image taps (tvm_ext/schedule/border_regions.py, tvm_ext/schedule/border_split.py) and the depthwise MAC
helper's straight-line window (backends/cortex_m/helpers/depthwise_mac_c.py).

- The helper's C, built on the host, against plain sums for every window of up to 5x5 taps (its three-tap
  steps and the one or two taps left) and strides that interleave rows.
- A DSP bundle's int8 tap fenced by a schedule barrier (issue 29), a Helium bundle's copy unchanged; template
  options empty unless a library fills them.
- The rectangles' arithmetic: the boxes outside the image's taps cover the window minus the box, once each.
- Depthwise models (stride 1 and 2, SAME and VALID padding, 8 and 6 channels, depth multiplier 2) compiled
  for cortex-m4f run bit-exactly with TFLite Micro under QEMU and on the host, warning-free, and no padded
  depthwise kernel tests a tap at run time: every `if` compares the output pixel's loops with constants.
"""

from __future__ import annotations

import itertools
import re
import subprocess

import numpy as np
import pytest

from backends.cortex_m.helpers.depthwise_mac_c import DEPTHWISE_MAC_TEMPLATE
from backends.cortex_m.helpers.dual_mac_c import mac_helpers_c
from backends.cortex_m.helpers.helium_c import helium_mac_helpers_c
from packager.template_files import helper_template_c
from tvm import tirx
from tvm_ext.schedule.border_regions import Segment, outside_boxes, pixel_segments

# --- the helper's C against plain sums (host) -----------------------------------------------------------------

_HARNESS = r"""
#include <stdint.h>
#include <stdio.h>
%s
int main(void)
{
    static int8_t x[4096], w[4096];
    int32_t rows, cols, xr, xc, wr, wc, value;
    for (int i = 0; i < 4096; ++i) { if (scanf("%%d", &value) != 1) return 1; x[i] = (int8_t)value; }
    for (int i = 0; i < 4096; ++i) { if (scanf("%%d", &value) != 1) return 1; w[i] = (int8_t)value; }
    while (scanf("%%d %%d %%d %%d %%d %%d", &rows, &cols, &xr, &xc, &wr, &wc) == 6) {
        int32_t acc[4] = {1, -2, 3, -4};
        t_depthwise_mac_s8x4(acc, x, w, xr, xc, wr, wc, rows, cols);
        printf("%%d %%d %%d %%d\n", (int)acc[0], (int)acc[1], (int)acc[2], (int)acc[3]);
    }
    return 0;
}
"""


def _plain_sums(x, w, rows, cols, xr, xc, wr, wc) -> list[int]:
    acc = [1, -2, 3, -4]
    for r, k, c in itertools.product(range(rows), range(cols), range(4)):
        acc[c] += int(x[r * xr + k * xc + c]) * int(w[r * wr + k * wc + c])
    return acc


def test_depthwise_helper_adds_every_tap_of_windows_up_to_5x5(tmp_path):
    rng = np.random.default_rng(16)
    x = rng.integers(-128, 128, 4096).astype(np.int8)
    w = rng.integers(-128, 128, 4096).astype(np.int8)
    cases = [(rows, cols, xr, xc, wr, wc) for rows in range(1, 6) for cols in range(1, 6)
             for xr, xc, wr, wc in ((320, 64, 192, 64), (40, 8, 24, 4), (4, 100, 7, 50))]
    source = tmp_path / "harness.c"
    source.write_text(_HARNESS % mac_helpers_c("t"))
    binary = tmp_path / "harness"
    subprocess.run(["gcc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-o", binary, source], check=True)
    stdin = " ".join(map(str, [*x, *w])) + "\n" + "\n".join(" ".join(map(str, case)) for case in cases)
    run = subprocess.run([binary], input=stdin, capture_output=True, text=True, check=True)
    got = [list(map(int, line.split())) for line in run.stdout.splitlines()]
    assert got == [_plain_sums(x, w, *case) for case in cases]


# --- the rectangles' arithmetic -------------------------------------------------------------------------------

_S8_STEP_TAPS = [f"t_depthwise_tap_any_s8x4(sums, x + {k} * x_col_stride, w, at + {k} * w_col_stride, weight_bytes);"
                 for k in ("k", "(k + 1)", "(k + 2)")]


def test_dsp_bundle_fences_each_int8_depthwise_tap_of_a_step_and_a_helium_bundle_keeps_the_template():
    """A DSP bundle's int8 depthwise row (int8 or int16 weights) fences each tap of its three-tap steps, and the first of the two taps
    left, with a schedule barrier (gcc -O2 otherwise hoists the next taps' loads above their MACs and spills:
    depthwise_mac.h.in); not the last tap of a row, nor the int16 row; and a Helium bundle's copy of the template
    (its build without MVE) is the template with its option empty: its C unchanged."""
    dsp = mac_helpers_c("t")
    fence = "\n#if defined(__ARM_FEATURE_DSP)\n        t_schedule_barrier();\n#endif"
    assert all(dsp.count(tap + fence) == 1 for tap in _S8_STEP_TAPS)
    assert dsp.count("if (k + 1 < cols) {" + fence + "\n        t_depthwise_tap_any_s8x4(") == 1  # between those left
    assert dsp.count(fence) == 4  # no other
    helium = helium_mac_helpers_c("t")
    assert fence not in helium and "option_" not in helium
    assert helper_template_c("backends.cortex_m.helpers", DEPTHWISE_MAC_TEMPLATE, "t") in helium


def test_template_options_are_empty_unless_given_and_an_unknown_one_is_refused():
    template = "backends.cortex_m.helpers", DEPTHWISE_MAC_TEMPLATE, "t"
    given = helper_template_c(*template, {"option_after_s8_tap": " /* here */"})
    assert given.count(" /* here */") == 4 and given.replace(" /* here */", "") == helper_template_c(*template)
    with pytest.raises(KeyError, match="option_nowhere"):
        helper_template_c(*template, {"option_nowhere": ""})


def test_outside_boxes_cover_the_window_minus_the_box_once():
    window = [(0, 3), (0, 4), (0, 2)]
    for box in itertools.product(*[[(lo, hi) for lo in range(a, b) for hi in range(lo + 1, b + 1)] for a, b in window]):
        counts = np.zeros([b - a for a, b in window], int)
        for outside in outside_boxes(list(box), window):
            counts[tuple(slice(lo, hi) for lo, hi in outside)] += 1
        inside = np.zeros_like(counts)
        inside[tuple(slice(lo, hi) for lo, hi in box)] = 1
        assert (counts == 1 - inside).all(), box


def test_pixel_segments_group_pixels_reading_the_same_taps():
    """A 3x3 window of stride 2 over 6 rows padded by 1 on top: output row y reads image rows 2y - 1 + ry."""
    y, ry = tirx.Var("y", "int32"), tirx.Var("ry", "int32")
    pixel = tirx.For(y, 0, 3, tirx.ForKind.SERIAL, tirx.Evaluate(0))
    tap = tirx.For(ry, 0, 3, tirx.ForKind.SERIAL, tirx.Evaluate(0))
    conjuncts = [tirx.LE(tirx.const(1, "int32"), y * 2 + ry), tirx.LT(y * 2 + ry, tirx.const(7, "int32"))]
    assert pixel_segments(pixel, [(tap, conjuncts)]) == [Segment(0, 1, ((1, 3),)), Segment(1, 3, ((0, 3),))]
    # Padded by 6 on top: output row 0 reads no image row at all (an empty box is not a rectangle of ours).
    far = [tirx.LE(tirx.const(6, "int32"), y * 2 + ry)]
    assert pixel_segments(pixel, [(tap, far)]) is None


# --- depthwise models on cortex-m4f under QEMU ----------------------------------------------------------------

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from test_border_split import _variables, kernels_bit_exact_everywhere  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor, build  # noqa: E402

SAME, VALID = 0, 1  # tflite.Padding
IMAGE = (7, 5)
# (window, depth multiplier, stride, padding)
CASES = [(3, 1, 1, SAME), (3, 1, 2, SAME), (3, 1, 1, VALID), (3, 2, 1, SAME), (3, 2, 2, SAME)]
# Windows wider than a small image, so that no pixel's window lies inside it (EfficientNet-lite's 5x5 layers at
# 4x4 pixels): 4x4 rectangles of the border, more than border_split.MAX_REGIONS.
OVERHANGING = [(5, 1, 1, SAME), (5, 2, 1, SAME), (7, 1, 1, SAME)]


def _depthwise_model(channels: int, seed: int, image: tuple[int, int] = IMAGE, cases: list = CASES) -> bytes:
    """One int8 input [1, *image, channels] (zero point -3) and one DEPTHWISE_CONV_2D per case of ``cases`` (its
    window a side, or (rows, cols)), each a model output."""
    rng = np.random.default_rng(seed)
    model = Model([Tensor("input", (1, *image, channels), "int8", Quantization((0.05,), (-3,)))], [], (0,), ())
    for index, (window, multiplier, stride, padding) in enumerate(cases):
        out_channels = channels * multiplier
        scales = tuple(0.004 + 0.001 * (o % 5) for o in range(out_channels))
        sides = window if isinstance(window, tuple) else (window, window)
        size = [-(-s // stride) if padding == SAME else (s - side) // stride + 1 for s, side in zip(image, sides)]
        first = len(model.tensors)
        shape = (1, *sides, out_channels)
        model.tensors += [
            Tensor(f"op{index}/weights", shape, "int8", Quantization(scales, (0,) * out_channels, 3),
                   rng.integers(-127, 128, shape).astype(np.int8)),
            Tensor(f"op{index}/bias", (out_channels,), "int32",
                   Quantization(tuple(0.05 * s for s in scales), (0,) * out_channels, 0),
                   rng.integers(-3000, 3000, out_channels).astype(np.int32)),
            Tensor(f"op{index}/output", (1, *size, out_channels), "int8", Quantization((0.3,), (5,)))]
        options = Options("DepthwiseConv2DOptions", {"Padding": padding, "StrideW": stride, "StrideH": stride,
                                                      "DepthMultiplier": multiplier})
        model.operators.append(Operator("DEPTHWISE_CONV_2D", (0, first, first + 1), (first + 2,), options, 3))
        model.outputs += (first + 2,)
    return build(model)


def _tap_tests(body: str) -> list[str]:
    """The tests of ``body``'s `if`s that read more than the output pixel's loops (y, x): tests per tap."""
    return [test for test in re.findall(r"if \((.*)\) \{", body) if not _variables(test) <= {"y", "x"}]


@pytest.mark.slow
@pytest.mark.parametrize("channels", [8, 6])
def test_padded_depthwise_picks_its_border_rectangle_per_pixel_and_stays_bit_exact(tmp_path, channels):
    kernels = kernels_bit_exact_everywhere(tmp_path, f"depthwise{channels}", _depthwise_model(channels, seed=channels))
    depthwise = {name: "\n".join(body) for name, body in kernels.items() if "depthwise" in name}
    assert len(depthwise) == len(CASES), sorted(kernels)
    # Channels not whole tiles of four may take the depthwise runs or pixel tiles
    # (backends.cortex_m.schedules.depthwise_runs), whose band rows are tested row by row, no border split; every
    # other test picks a rectangle of the border by the output pixel alone: none asks about a tap.
    runs = {name for name, body in depthwise.items() if "band_ptr" in body}
    assert channels % 4 or not runs, sorted(runs)
    split = {name: body for name, body in depthwise.items() if name not in runs}
    assert all(not _tap_tests(body) for body in split.values()), {n: _tap_tests(b) for n, b in split.items()}
    # With four channels a tile and a multiplier of 1, the border boxes are the MAC helper's calls and the
    # interior its window call or the fused tiles' (backends.cortex_m.schedules.depthwise_tiles).
    if channels % 4 == 0:
        tiled = [body for name, body in depthwise.items() if name.endswith(f"x{channels}")]
        assert len(tiled) == 3 and all(re.search(r"depthwise_(mac|tiles\w*)_s8x4", body) for body in tiled), \
            sorted(depthwise)


@pytest.mark.slow
def test_window_overhanging_every_pixel_is_cut_into_rectangles_and_stays_bit_exact(tmp_path):
    """5x5 and 7x7 windows over 4x4 pixels: every pixel is border, in 16 rectangles (more than MAX_REGIONS);
    no tap is tested at run time, the boxes are the MAC helper's calls, and the sums match TFLite Micro."""
    kernels = kernels_bit_exact_everywhere(tmp_path, "overhanging", _depthwise_model(8, 29, (4, 4), OVERHANGING))
    depthwise = {name: "\n".join(body) for name, body in kernels.items() if "depthwise" in name}
    assert len(depthwise) == len(OVERHANGING), sorted(kernels)
    assert all(not _tap_tests(body) for body in depthwise.values()), {n: _tap_tests(b) for n, b in depthwise.items()}
    tiled = [body for name, body in depthwise.items() if name.endswith("x8")]
    # (the 5x5 window's border one call of the DSP border helper, backends.cortex_m.schedules.depthwise_tiles)
    assert len(tiled) == 2 and all(re.search(r"depthwise_(box|border5x5)_s8x4", body) for body in tiled), \
        sorted(depthwise)
