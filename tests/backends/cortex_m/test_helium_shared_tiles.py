"""The bundle's choice of Helium's fused depthwise helper's form (backends/cortex_m/schedules/depthwise_tiles.py:
``form_uses``, ``shared_tiles``; backends/cortex_m/schedules/__init__.py: ``helium_bundle_choice``; the second
schedule of tvm_ext/lower.py's ScheduleKernels): a window form's out-of-line copy is called by the kernels whose
inlined code weighs more than the copy's calls cost, where the copy and those calls weigh less than their inlined
code, from the facts of every kernel of the bundle, not a tile count per kernel.

- The decision on facts alone: one kernel called four times keeps the helper inlined; nine kernels of one form
  share the copy; a large layer whose tiles the copy would run with rolled taps keeps it inlined while the others
  share it; kernels whose channels are whole tiles of 8, not of 16 (less inlined code) keep it inlined, one of a
  whole tile and a predicated one (more inlined code) calls the copy even alone; each bias type
  pays its own copy; a kernel's interior calls of one form count together; a small layer whose taps the copy
  rolls pays for that tile's code; a form without a copy is never shared.
- Compiled for cortex-m55 and run bit for bit with TFLite Micro under QEMU mps3-an547: a chain of four identical
  3x3 depthwise layers (one kernel called four times, 128 tile iterations each, which the former rule of 320 tile
  iterations sent to the copy) inlines the helper; three 3x3 kernels of 400, 100 and 324 tile iterations (the
  former rule inlined two of them) all call the copy; two 10x10 kernels of 40 channels (SAME, VALID) inline it.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from backends.code_price import INSTRUCTIONS_PER_BYTE
from backends.cortex_m.schedules.depthwise_tiles import HELIUM_COPY_COSTS, KernelUse, shared_tiles


I32_3X3 = ("3x3", "int32")
"""The copy of 3x3 windows with int32 biases."""


def _sharing(uses: dict) -> dict:
    """``shared_tiles`` of ``uses`` as {(form, bias type): kernels calling its copy}."""
    return dict(shared_tiles(uses).sharing)


def test_one_kernel_called_four_times_keeps_the_helper_inlined():
    # kws_ref_model's one 3x3 kernel: 25x5 pixels, 64 channels, called four times
    uses = {I32_3X3: (KernelUse("dw", calls=4, pixels=125, channels=64, taps=9),)}
    assert _sharing(uses) == {}
    # the same facts in two kernels: the copy pays
    two = {I32_3X3: (KernelUse("dw", 2, 125, 64, 9), KernelUse("dw_2", 2, 125, 64, 9))}
    assert _sharing(two) == {I32_3X3: frozenset({"dw", "dw_2"})}


def test_a_kernel_of_two_inlined_tiles_calls_the_copy():
    # ds_cnn_w30_49x10's one 3x3 kernel of 30 channels (25x5 pixels, called four times): inlined, a whole tile of 16
    # and a predicated one of 14 (measured 2,492 B the kernel, 294 B calling the copy; 75,328 -> 73,080 instructions
    # a call: the copy's overlapping tile is faster than the predicated one)
    cost = HELIUM_COPY_COSTS["3x3"]
    assert cost.inlined_bytes(30) == 2 * cost.inlined > cost.inlined_bytes(32) > cost.inlined_bytes(24)
    assert _sharing({I32_3X3: (KernelUse("dw", calls=4, pixels=125, channels=30, taps=9),)}) \
        == {I32_3X3: frozenset({"dw"})}


def test_a_kernel_of_a_whole_and_a_predicated_tile_prices_the_copy_by_its_pixels():
    """Before: a DS-CNN's one 3x3 kernel on 61x13 (31x7 pixels, 44 channels, called four times) priced its calls of the
    copy at ``call`` and ``tile`` (124 instructions a pixel: 107,632 an inference) and kept the helper inlined,
    5,256 B of code on cortex-m55 against cortex-m4f's 4,640. Expected: its inlined whole and predicated tiles
    (``CopyCost.splits``) price the copy at ``split_pixel`` a pixel (measured 12,612 more an inference, 15 a
    pixel), so it calls the copy (4,108 B); a kernel of whole tiles of 16 or 8 keeps ``call`` and ``tile``."""
    cost = HELIUM_COPY_COSTS["3x3"]
    dw = KernelUse("dw", calls=4, pixels=217, channels=44, taps=9)
    assert cost.splits(44) and cost.splits(30) and not cost.splits(48) and not cost.splits(40) \
        and not cost.splits(12)
    assert dw.copy_instructions(cost) == 4 * 217 * cost.split_pixel
    assert KernelUse("dw", 4, 217, 48, 9).copy_instructions(cost) == 4 * 217 * (cost.call + 3 * cost.tile)
    assert _sharing({I32_3X3: (dw,)}) == {I32_3X3: frozenset({"dw"})}


def test_5x5_kernels_share_their_copy():
    # efficientnet_lite_w030_112_int8's 5x5 kernels (pixels with the border's, channels; one called twice): each
    # saves 2,238-2,526 B calling the copy, and runs faster (measured)
    shapes = [(196, 96), (49, 144), (49, 192), (49, 48), (4, 192)]
    uses = {("5x5", "int32"): tuple(KernelUse(f"dw{index}", 2 if index == 2 else 1, pixels, channels, 25)
                                    for index, (pixels, channels) in enumerate(shapes))}
    assert _sharing(uses) == {("5x5", "int32"): frozenset(f"dw{index}" for index in range(len(shapes)))}


def test_several_kernels_share_the_copy():
    # vww_96_int8's nine 3x3 kernels (pixels, channels), 576 tile iterations and fewer
    shapes = [(576, 16), (144, 32), (144, 64), (36, 64), (36, 128), (36, 128), (9, 128), (9, 256), (576, 32)]
    uses = {I32_3X3: tuple(KernelUse(f"dw{index}", 1, pixels, channels, 9)
                         for index, (pixels, channels) in enumerate(shapes))}
    assert _sharing(uses) == {I32_3X3: frozenset(f"dw{index}" for index in range(len(shapes)))}
    # one-row windows the same way (str_ww_ref_model's 3x1 .. 15x1 kernels)
    rows = {("1xn", "int32"): tuple(KernelUse(f"row{taps}", 1, pixels, 40, taps)
                                    for pixels, taps in ((28, 3), (24, 5), (15, 10), (1, 15)))}
    assert _sharing(rows) == {("1xn", "int32"): frozenset(f"row{taps}" for taps in (3, 5, 10, 15))}


def test_a_layer_the_copy_would_slow_most_keeps_the_helper_inlined():
    # person_detect's 48x48 layer of 8 channels: its taps rolled in the copy (measured 390,543 -> 687,861
    # instructions), more than its inlined bytes are worth; the other kernels share the copy
    big = KernelUse("dw48", 1, 2304, 8, 9)
    others = tuple(KernelUse(f"dw{index}", 1, pixels, channels, 9)
                   for index, (pixels, channels) in enumerate(((576, 16), (576, 32), (144, 64))))
    assert big.copy_instructions(HELIUM_COPY_COSTS["3x3"]) > HELIUM_COPY_COSTS["3x3"].inlined * INSTRUCTIONS_PER_BYTE
    assert _sharing({I32_3X3: (big, *others)}) == {I32_3X3: frozenset(use.kernel for use in others)}


def test_kernels_of_an_overlapping_last_tile_keep_the_helper_inlined():
    # two 10x10 kernels, SAME (100 pixels) and VALID (64), of 40 or 24 channels: inlined, each holds tiles of 8
    # channels, about half the code of whole tiles of 16 (measured 514-552 B more than calling the copy), too little
    # for the copy's 1,020 B and its calls (measured, sharing / inlining: 40 channels 132,197 / 110,906
    # instructions, 2,520 / 2,560 B); of 32 channels (whole tiles) they share it
    for channels in (40, 24):
        uses = {I32_3X3: (KernelUse("same", 1, 100, channels, 9), KernelUse("valid", 1, 64, channels, 9))}
        assert _sharing(uses) == {}, channels
    whole = {I32_3X3: (KernelUse("same", 1, 100, 32, 9), KernelUse("valid", 1, 64, 32, 9))}
    assert _sharing(whole) == {I32_3X3: frozenset({"same", "valid"})}


def test_each_bias_type_pays_its_own_copy():
    # three int32-bias kernels share their copy; one int16-bias kernel would hold a copy of its own for itself
    # alone (``HELIUM_TILES_OUTLINED_OPS``: one copy per form and bias type), so it keeps the helper inlined
    int32 = tuple(KernelUse(f"dw{index}", 1, 36, 64, 9) for index in range(3))
    uses = {I32_3X3: int32, ("3x3", "int16"): (KernelUse("dw16", 1, 36, 64, 9),)}
    assert _sharing(uses) == {I32_3X3: frozenset(use.kernel for use in int32)}


def test_a_kernel_pays_for_all_its_interior_calls():
    # one kernel with two interior calls of one form: a small one and a large layer of rolled taps; their gains
    # summed, calling the copy does not pay for it, while the two small kernels beside it share the copy
    small, big = KernelUse("dw", 1, 36, 64, 9), KernelUse("dw", 1, 2304, 8, 9)
    others = (KernelUse("dw_a", 1, 36, 64, 9), KernelUse("dw_b", 1, 36, 64, 9))
    assert small.gain(HELIUM_COPY_COSTS["3x3"], INSTRUCTIONS_PER_BYTE) > 0
    assert _sharing({I32_3X3: (big, small, *others)}) == {I32_3X3: frozenset({"dw_a", "dw_b"})}


def test_a_small_layer_whose_taps_the_copy_rolls_pays_for_its_rolled_tile():
    # an 8-channel kernel of 9 pixels would save more than its calls cost, but not the 774 B the copy grows by
    # once it calls it (measured: person_detect's copy 1,020 -> 1,794 B); the three 64-channel kernels share it
    cost = HELIUM_COPY_COSTS["3x3"]
    small = KernelUse("dw8", 1, 9, 8, 9)
    assert 0 < small.gain(cost, INSTRUCTIONS_PER_BYTE) < cost.rolled_copy * INSTRUCTIONS_PER_BYTE
    others = tuple(KernelUse(f"dw{index}", 1, 36, 64, 9) for index in range(3))
    assert _sharing({I32_3X3: (small, *others)}) == {I32_3X3: frozenset(use.kernel for use in others)}


def test_a_form_without_a_copy_is_never_shared():
    uses = {("7x7", "int32"): tuple(KernelUse(f"dw{index}", 1, 16, 16, 49) for index in range(5))}
    assert _sharing(uses) == {}


# --- compiled for cortex-m55, bit-exact under QEMU ------------------------------------------------------------

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from emulator.tools import missing_tools  # noqa: E402
from test_depthwise_border_regions import SAME, VALID  # noqa: E402
from test_depthwise_border_regions import _depthwise_model  # noqa: E402
from test_requantize_epilogue import bit_exact_bundle  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor, build  # noqa: E402


def _chain_model(layers: int = 4, image: tuple[int, int] = (8, 8), channels: int = 32, seed: int = 4) -> bytes:
    """One int8 input [1, *image, channels] through ``layers`` 3x3 SAME DEPTHWISE_CONV_2D layers of one shape (one
    kernel called ``layers`` times), the last one the model's output."""
    rng = np.random.default_rng(seed)
    model = Model([Tensor("input", (1, *image, channels), "int8", Quantization((0.05,), (-3,)))], [], (0,), ())
    source = 0
    for index in range(layers):
        scales = tuple(0.004 + 0.001 * (o % 5) for o in range(channels))
        first = len(model.tensors)
        model.tensors += [
            Tensor(f"op{index}/weights", (1, 3, 3, channels), "int8", Quantization(scales, (0,) * channels, 3),
                   rng.integers(-127, 128, (1, 3, 3, channels)).astype(np.int8)),
            Tensor(f"op{index}/bias", (channels,), "int32",
                   Quantization(tuple(0.05 * s for s in scales), (0,) * channels, 0),
                   rng.integers(-3000, 3000, channels).astype(np.int32)),
            Tensor(f"op{index}/output", (1, *image, channels), "int8", Quantization((0.05,), (-3,)))]
        options = Options("DepthwiseConv2DOptions", {"Padding": SAME, "StrideW": 1, "StrideH": 1,
                                                      "DepthMultiplier": 1})
        model.operators.append(Operator("DEPTHWISE_CONV_2D", (source, first, first + 1), (first + 2,), options, 3))
        source = first + 2
    model.outputs = (source,)
    return build(model)


def _interior_calls(kernels: str) -> list[str]:
    """The fused helper's interior calls of ``kernels``' C: "tiles" (inlined) or "tiles3x3" (the copy)."""
    return re.findall(r"_depthwise_(tiles|tiles3x3)_s8(?:_b16)?\(", kernels)


@pytest.mark.skipif(bool(missing_tools()), reason="needs arm-none-eabi-gcc and qemu-system-arm")
def test_one_kernel_called_four_times_inlines_the_helper_bit_exactly(tmp_path):
    bundle, kernels = bit_exact_bundle(tmp_path, "chain", _chain_model(), "cortex-m55", "mps3-an547")
    assert len([call for call in bundle.plan.calls if "depthwise" in call.kernel]) == 4
    assert _interior_calls(kernels) == ["tiles"], kernels


@pytest.mark.skipif(bool(missing_tools()), reason="needs arm-none-eabi-gcc and qemu-system-arm")
def test_several_kernels_share_the_copy_bit_exactly(tmp_path):
    # 20x20 SAME (400 tile iterations), at stride 2 (100), VALID (18x18: 324): 16 channels, one tile each
    model = _depthwise_model(16, 20, (20, 20), [(3, 1, 1, SAME), (3, 1, 2, SAME), (3, 1, 1, VALID)])
    _, kernels = bit_exact_bundle(tmp_path, "several", model, "cortex-m55", "mps3-an547")
    assert _interior_calls(kernels) == ["tiles3x3"] * 3, kernels


@pytest.mark.skipif(bool(missing_tools()), reason="needs arm-none-eabi-gcc and qemu-system-arm")
def test_kernels_of_an_overlapping_last_tile_inline_the_helper_bit_exactly(tmp_path):
    # 10x10 SAME and VALID, 40 channels (tiles of 8 inlined, the copy's last tile overlapping the one before): the
    # copy would save some 80 B for 21,000 instructions more (measured), so both inline the helper
    model = _depthwise_model(40, 21, (10, 10), [(3, 1, 1, SAME), (3, 1, 1, VALID)])
    _, kernels = bit_exact_bundle(tmp_path, "overlapping", model, "cortex-m55", "mps3-an547")
    assert _interior_calls(kernels) == ["tiles"] * 2, kernels
