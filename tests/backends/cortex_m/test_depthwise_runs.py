"""int8 DEPTHWISE_CONV_2D of channels not whole tiles of four on a DSP core as runs of four-element tiles or as pixel
tiles (backends/cortex_m/schedules/depthwise_runs.py), bit-exact with TFLite Micro; an even channel count's weights
widened to int16 by the int8 lowering where the pixel tiles take the layer (they read them so), int8 where the runs
(the 6-channel case) or the generic kernel (10 channels at dilation 3) take it.

One model of one layer per case, each with its own input and output. Runs: 2, 3, 5 and 6 channels (their phases
every one or every other channel), square and even windows, SAME and VALID padding, a row stride of 2, dilation 2,
output rows whose elements are whole tiles of four or not (the last tile overlapping the one before it), an output
row of exactly one tile. Pixel tiles: 7, 21 and 30 channels (the last tile overlapping), 17 over 12x12 (its last channel
alone: the tail form, which pays over its 144 pixels; 21 over 45 pixels keeps the overlapping tile), whole rows in the
band, and
42 channels whose band holds a strip of a row (three strips of 5 of the 6 pixels that fit, spread over the row's 13,
the last overlapping the one before it; at dilation 2 three of 4). Window form (pixel tiles on a copy of each pixel's window, or of the border pixels' only): stepping two columns
(6, 13, 45 and 11 channels; SAME and VALID, every pixel interior; a 5x5 window; dilation 2; a row stride of 1),
windows copied in two chunks (179 and 130 channels; 45 at 5x5). A layer stepping two columns of too few channels and
one whose dilated window lies mostly outside its image keep the generic kernel (of 3, and of 6 over too few MACs; of 5
and 10). The bundle's
self-test under QEMU compares every output with TFLite Micro's.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import numpy as np
import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from c_checks import stack_array_bytes  # noqa: E402
from emulator.tools import missing_tools  # noqa: E402
from test_dual_mac import bit_exact_on_cortex_m4f  # noqa: E402
from tflite_builder import ModelBuilder, Options, Quantization, Tensor, build  # noqa: E402

SAME, VALID = 0, 1
INPUT_QUANT = Quantization((0.05,), (-3,))


@dataclass(frozen=True)
class Case:
    """A DEPTHWISE_CONV_2D (multiplier 1) over an image of `size` pixels of `channels` channels."""

    channels: int
    kernel: tuple[int, int]
    size: tuple[int, int]
    padding: int = SAME
    strides: tuple[int, int] = (1, 1)
    dilation: int = 1

    def output_size(self) -> tuple[int, int]:
        extents = [(k - 1) * self.dilation + 1 for k in self.kernel]
        if self.padding == SAME:
            return tuple(-(-s // t) for s, t in zip(self.size, self.strides))
        return tuple((s - e) // t + 1 for s, e, t in zip(self.size, extents, self.strides))


RUNS = (
    Case(3, (3, 3), (9, 9)),  # rows of 27 elements: six tiles and an overlapping seventh
    Case(3, (3, 3), (6, 8), VALID),  # rows of 18
    Case(5, (5, 5), (8, 7), strides=(2, 1)),  # every other row; rows of 35
    Case(6, (3, 3), (10, 8), dilation=2),  # rows of 48: whole tiles
    Case(2, (3, 1), (8, 2), VALID),  # rows of 4: one tile
)
PIXELS = (
    Case(7, (2, 3), (5, 5), VALID),  # an even window, rows of 3 pixels
    Case(21, (3, 3), (5, 9)),  # odd: tiles from 0, 4, .., 16 and 17
    Case(30, (3, 3), (6, 5)),  # ds_cnn_w30_49x10_int8's 3x3 layer's channels, two mod four
    Case(17, (3, 3), (12, 12)),  # one mod four, 144 pixels: the last channel alone (tail_pays)
    Case(42, (3, 3), (4, 13)),  # strips of 5 pixels from 0, 4 and 8 (of 6 from 0, 3 and 7 they recomputed 5)
    Case(42, (3, 3), (8, 11), dilation=2),  # strips of 4 pixels from 0, 3 and 7
)
WINDOWS = (
    Case(6, (3, 3), (26, 26), strides=(2, 2)),  # stepping two columns, even: widened weights
    Case(13, (3, 3), (17, 19), VALID, strides=(2, 2)),  # odd, every pixel interior
    Case(179, (3, 3), (4, 4)),  # stepping one column, not one pixel's window fits the band: two chunks of 92
    Case(45, (5, 5), (20, 20), strides=(2, 2)),  # 64 interior pixels read the image, the border two chunks of 24
    Case(130, (3, 3), (6, 7), strides=(1, 2)),  # ... of 68 (from 0 and 62, even), stepping two columns
    Case(11, (3, 3), (18, 18), strides=(2, 2), dilation=2),  # dilated
)
GENERIC = (Case(3, (3, 3), (9, 9), strides=(2, 2)),  # stepping two columns, too few channels: the generic kernel
           Case(6, (3, 3), (9, 9), strides=(2, 2)),  # ... too few MACs for the window form's code (window_pays)
           Case(5, (3, 3), (6, 6), dilation=3),  # 44% of its taps in the image (INSIDE): the generic kernel
           Case(10, (3, 3), (6, 6), dilation=3))  # ... of an even channel count: its weights int8


def _model(cases: tuple[Case, ...], seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    model = ModelBuilder()
    for index, case in enumerate(cases):
        data = model.add(Tensor(f"in{index}", (1, *case.size, case.channels), "int8", INPUT_QUANT))
        model.inputs.append(data)
        scales = tuple(float(s) for s in rng.uniform(0.002, 0.01, case.channels))
        weights = rng.integers(-127, 128, (1, *case.kernel, case.channels)).astype(np.int8)
        weight = model.add(Tensor(f"w{index}", weights.shape, "int8", Quantization(scales, (0,) * case.channels, 3),
                                  weights))
        bias = model.add(Tensor(f"b{index}", (case.channels,), "int32",
                                Quantization(tuple(s * INPUT_QUANT.scales[0] for s in scales), (0,) * case.channels),
                                rng.integers(-2000, 2000, case.channels).astype(np.int32)))
        taps = case.kernel[0] * case.kernel[1]
        out_quant = Quantization((0.05 * 0.006 * 40 * float(np.sqrt(taps)) / 4,), (-5,))
        options = Options("DepthwiseConv2DOptions", {
            "Padding": case.padding, "StrideH": case.strides[0], "StrideW": case.strides[1], "DepthMultiplier": 1,
            "DilationHFactor": case.dilation, "DilationWFactor": case.dilation})
        model.outputs.append(model.op("DEPTHWISE_CONV_2D", (data, weight, bias), Tensor(
            f"out{index}", (1, *case.output_size(), case.channels), "int8", out_quant), options, version=2))
    return build(model.model())


def test_depthwise_runs_are_bit_exact_with_tflite_micro(tmp_path):
    if missing_tools():
        pytest.skip("needs arm-none-eabi-gcc and qemu-system-arm")
    bundle = bit_exact_on_cortex_m4f(tmp_path, "depthwise_runs", _model(RUNS + PIXELS + WINDOWS + GENERIC))
    assert len(bundle.selftest.max_errors) == len(RUNS) + len(PIXELS) + len(WINDOWS) + len(GENERIC)  # every case's output compared
    kernels = (bundle.out_dir / f"{bundle.plan.model}_kernels.c").read_text()
    # each case of RUNS one kernel of phases and tile calls, each of PIXELS and WINDOWS one of pixel calls (a band
    # only where some pixel's window leaves the image: all but the VALID one of WINDOWS); the generic ones none
    assert kernels.count("int8_t phase_w_ptr[") == len(RUNS), kernels
    assert len(re.findall(r"\n\s*int8_t band_ptr\[", kernels)) == len(RUNS) + len(PIXELS) + len(WINDOWS) - 1, kernels
    pixel_kernels = [body for body in kernels.split("\nvoid ") if re.search(r"_depthwise_pixel(_tail)?_s8x4", body)]
    assert len(pixel_kernels) == len(PIXELS) + len(WINDOWS), kernels
    # the tail form where it pays (17 channels over 144 pixels), the overlapping last tile elsewhere
    tails = [body for body in pixel_kernels if "_depthwise_pixel_tail_s8x4" in body]
    assert len(tails) == 1 and "_12x12x17(" in tails[0].split("\n")[0], kernels
    assert not any("phase_w" in body for body in pixel_kernels), kernels
    # the windows' interior pixels read the image where it lies where every pixel is interior (VALID) or the copies
    # saved pay for the second call's code (the 5x5 one)
    assert sum(re.search(r"_depthwise_pixel_s8x4\w*\(\(&\(output0\[[^;]*\(&\(input0\[", body) is not None
               for body in pixel_kernels) == 2, kernels
    # an even channel count's pixel tiles read the weights the lowering widened (int16: a tap's weights one LDRD),
    # an odd one's int8 (their taps' weights would not be word-aligned)
    widened = [body for body in pixel_kernels if "_depthwise_pixel_s8x4w16" in body]
    assert len(widened) == sum(case.channels % 2 == 0 for case in PIXELS + WINDOWS), kernels
    assert all("const int16_t* weights" in body for body in widened), kernels
    # ... and only they: the runs and the generic kernel read int8 weights (widened, they ran slower: the reviewer's
    # 6 channels stepping two columns 14,849 -> 15,368 instructions, 10 at dilation 3 21,197 -> 26,290)
    assert kernels.count("const int16_t* weights") == len(widened), kernels
    assert kernels.count("const int8_t* weights") == len(RUNS) + len(PIXELS) + len(WINDOWS) + len(GENERIC) \
        - len(widened), kernels
    # the strips: each band 7 pixels of 42 channels over 3 rows (5 outputs), or 8 at dilation 2 (4 outputs)
    assert sum("int8_t band_ptr[882]" in body for body in pixel_kernels) == 1, kernels
    assert sum("int8_t band_ptr[1008]" in body for body in pixel_kernels) == 1, kernels
    # the stack a --no-build compile counts bounds the one measured: the profile's bound for the frames + the
    # largest arrays a kernel declares (a strip's band); the bound alone (1,024 B) was below the 1,160 B measured
    headroom = json.loads((bundle.out_dir / "manifest.json").read_text())["headroom"]
    arrays = stack_array_bytes(kernels)
    assert headroom["stack_bound"]["kernel_arrays_bytes"] == max(arrays.values()), arrays
    assert headroom["stack_source"] == "measured"
    assert 1_024 < headroom["stack_bytes"] <= headroom["stack_bound"]["bytes"], headroom


def test_pixel_tiles_band_is_the_fewest_strips_within_its_stack_bound():
    """The pixel tiles' band (a strip of `strip_pixels` output pixels' window columns over the window's rows) stays
    within BAND_BYTES of stack, a row takes the fewest strips whose bands do (whole rows where they fit), each of the
    fewest pixels those strips take (spread evenly: fewer pixels computed twice), or none where not one pixel's
    window fits (the generic kernel then)."""
    from backends.cortex_m.schedules.depthwise_runs import BAND_BYTES, strip_pixels

    def band(strip: int, channels: int, kh: int, kw: int, dilation: int) -> int:
        return kh * (strip + (kw - 1) * dilation) * channels

    for channels in (5, 30, 42, 90, 130, 255):
        for kh, kw, dilation in ((3, 3, 1), (5, 5, 1), (3, 3, 2), (1, 10, 1), (2, 3, 1)):
            for out_w in (1, 5, 13, 64):
                strip = strip_pixels(channels, kh, kw, dilation, out_w)
                assert 0 <= strip <= out_w
                if strip == 0:
                    assert band(1, channels, kh, kw, dilation) > BAND_BYTES
                    continue
                assert band(strip, channels, kh, kw, dilation) <= BAND_BYTES
                strips = -(-out_w // strip)
                # one strip fewer would not fit; one pixel fewer a strip would take a strip more
                assert strips == 1 or band(-(-out_w // (strips - 1)), channels, kh, kw, dilation) > BAND_BYTES
                assert strip == 1 or -(-out_w // (strip - 1)) > strips


def test_the_tail_form_takes_a_last_lone_channel_where_its_pixels_pay_its_code():
    """The pixel tiles' tail form (the last channel alone) only for a channel count one more than a multiple of four
    from 5, and only where the kernel's pixel calls save more than its code costs at the code price."""
    from backends.cortex_m.schedules.depthwise_runs import tail_pays

    assert tail_pays(17, 9, 144) and tail_pays(33, 9, 161)  # the test's case, ds_cnn_w33_45x13_int8's layer
    assert not tail_pays(21, 9, 45)  # too few pixels for its code
    assert not any(tail_pays(channels, 9, 10_000) for channels in (1, 4, 6, 7, 8, 19, 30))


def test_a_profile_s_kernel_stack_bytes_bound_every_form_s_band_and_phases():
    """The kernel's local arrays (its band: rows, a strip or a window's copy; the runs' phases) stay within the
    profile's `kernel_stack_bytes` (half each), which the profile passes down (`kernel_schedules`): a tight board's
    smaller budget takes narrower strips and window chunks, or the generic kernel, never a larger band."""
    from dataclasses import replace

    from backends.cortex_m.schedules import kernel_schedules
    from backends.cortex_m.schedules.depthwise_runs import _geometry, phase_bytes
    from target import load_profile

    tight = replace(load_profile("cortex-m4f"), kernel_stack_bytes=512)
    schedules = kernel_schedules(tight)
    assert schedules.few_channel_depthwise.keywords == schedules.depthwise_pixel_tiles.keywords == {"band_bytes": 256}
    assert schedules.depthwise_rows_take.keywords == {"band_bytes": 256}
    assert kernel_schedules(tight).few_channel_depthwise is schedules.few_channel_depthwise  # layers share kernels
    # the channel rows' band (a 3x3 SAME layer over 64x64x16: 3 rows of pitch 68 and the alignment int16, 410 B)
    # within the same budget: the default's 1,024 B takes it, the tight board's 256 B does not
    layer = ((64, 64, 16), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 4)
    assert kernel_schedules(load_profile("cortex-m4f")).depthwise_rows_take(*layer)
    assert not schedules.depthwise_rows_take(*layer)
    forms = {}
    for band_bytes in (256, 1024):
        for case in RUNS + PIXELS + WINDOWS:
            extents = [(k - 1) * case.dilation + 1 for k in case.kernel]
            pads = [max(0, (o - 1) * s + e - n) for o, s, e, n in zip(case.output_size(), case.strides, extents,
                                                                      case.size)] if case.padding == SAME else [0, 0]
            padding = (pads[0] // 2, pads[1] // 2, pads[0] - pads[0] // 2, pads[1] - pads[1] // 2)
            g = _geometry((*case.size, case.channels), case.kernel, case.strides, padding,
                          (case.dilation, case.dilation), 4, band_bytes)
            if g is None:
                continue
            band = g.kh * g.kw * g.window if g.window else g.kh * g.pitch
            assert band <= band_bytes and phase_bytes(g.runs, g.kh * g.kw, 4) <= band_bytes, (case, g)
            forms[band_bytes, case] = (g.runs > 0, g.strip, g.window)
    assert len(forms) > len(RUNS + PIXELS + WINDOWS)  # most take a form on the tight board too
    assert any(forms[256, case] != forms[1024, case] for _, case in forms if (256, case) in forms)


def test_the_rows_of_any_window_take_large_images_stepping_one_column():
    """The channel rows of a window other than 3x3 (depthwise_rows.ANY_OP: four outputs a window row's loads) take a
    layer where their estimate beats the tiles' by their code's price: a 5x5 SAME layer over 14x14x96
    (efficientnet_lite's, 3.2 -> 2.5 instructions per MAC measured), not over 7x7x144 (their per-row and per-channel
    costs: a tie), nor stepping two columns (one output at a time), nor a window wider than MAX_KW; 3x3 keeps its own
    helper."""
    from backends.cortex_m.schedules.depthwise_rows import ANY_OP, MAX_KW, ROWS_OP, _rows_geometry
    from backends.cortex_m.schedules.depthwise_runs import BAND_BYTES

    op, sizes, size = _rows_geometry((14, 14, 96), (5, 5), (1, 1), (2, 2, 2, 2), (1, 1), BAND_BYTES)
    # ring 5 rows of pitch 20 (the last quad's pairs reach column 19), the window 5x5, the band 322 B
    assert op == ANY_OP and sizes[-6:] == (20, 1, 1, 5, 5, 5) and size == 322
    assert _rows_geometry((7, 7, 144), (5, 5), (1, 1), (2, 2, 2, 2), (1, 1), BAND_BYTES) is None
    assert _rows_geometry((28, 28, 48), (5, 5), (2, 2), (1, 1, 2, 2), (1, 1), BAND_BYTES) is None
    wide = MAX_KW + 1
    assert _rows_geometry((64, 64, 16), (3, wide), (1, 1), (1, wide // 2, 1, wide // 2), (1, 1), BAND_BYTES) is None
    assert _rows_geometry((64, 64, 16), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), BAND_BYTES)[0] == ROWS_OP
