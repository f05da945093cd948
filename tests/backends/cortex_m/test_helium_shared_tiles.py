"""The bundle's choice of Helium's fused depthwise helper's form (backends/cortex_m/schedules/depthwise_tiles.py:
``form_uses``, ``shared_tiles``; backends/cortex_m/schedules/__init__.py: ``helium_bundle_choice``; the second
schedule of tvm_ext/lower.py's ScheduleKernels): a window form's out-of-line copy is called by the kernels whose
inlined code weighs more than the copy's calls cost, where the copy and those calls weigh less than their inlined
code, from the facts of every kernel of the bundle, not a tile count per kernel.

- The decision on facts alone: one kernel called four times keeps the helper inlined; nine kernels of one form
  share the copy; a large layer whose tiles the copy would run with rolled taps keeps it inlined while the others
  share it; a form without a copy is never shared.
- Compiled for cortex-m55 and run bit for bit with TFLite Micro under QEMU mps3-an547: a chain of four identical
  3x3 depthwise layers (one kernel called four times, 128 tile iterations each, which the former rule of 320 tile
  iterations sent to the copy) inlines the helper; three 3x3 kernels of 400, 100 and 324 tile iterations (the
  former rule inlined two of them) all call the copy.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from backends.cortex_m.schedules.depthwise_tiles import (HELIUM_COPY_COSTS, INSTRUCTIONS_PER_BYTE, KernelUse,
                                                          shared_tiles)


def _sharing(uses: dict) -> dict:
    """``shared_tiles`` of ``uses`` as {form: kernels calling its copy}."""
    return dict(shared_tiles(uses).sharing)


def test_one_kernel_called_four_times_keeps_the_helper_inlined():
    # kws_ref_model's one 3x3 kernel: 25x5 pixels, 64 channels, called four times
    uses = {"3x3": (KernelUse("dw", calls=4, pixels=125, channels=64, taps=9),)}
    assert _sharing(uses) == {}
    # the same facts in two kernels: the copy pays
    two = {"3x3": (KernelUse("dw", 2, 125, 64, 9), KernelUse("dw_2", 2, 125, 64, 9))}
    assert _sharing(two) == {"3x3": frozenset({"dw", "dw_2"})}


def test_several_kernels_share_the_copy():
    # vww_96_int8's nine 3x3 kernels (pixels, channels), 576 tile iterations and fewer
    shapes = [(576, 16), (144, 32), (144, 64), (36, 64), (36, 128), (36, 128), (9, 128), (9, 256), (576, 32)]
    uses = {"3x3": tuple(KernelUse(f"dw{index}", 1, pixels, channels, 9)
                         for index, (pixels, channels) in enumerate(shapes))}
    assert _sharing(uses) == {"3x3": frozenset(f"dw{index}" for index in range(len(shapes)))}
    # one-row windows the same way (str_ww_ref_model's 3x1 .. 15x1 kernels)
    rows = {"1xn": tuple(KernelUse(f"row{taps}", 1, pixels, 40, taps) for pixels, taps in ((28, 3), (24, 5), (15, 10),
                                                                                              (1, 15)))}
    assert _sharing(rows) == {"1xn": frozenset(f"row{taps}" for taps in (3, 5, 10, 15))}


def test_a_layer_the_copy_would_slow_most_keeps_the_helper_inlined():
    # person_detect's 48x48 layer of 8 channels: its taps rolled in the copy (measured 390,543 -> 687,861
    # instructions), more than its inlined bytes are worth; the other kernels share the copy
    big = KernelUse("dw48", 1, 2304, 8, 9)
    others = tuple(KernelUse(f"dw{index}", 1, pixels, channels, 9)
                   for index, (pixels, channels) in enumerate(((576, 16), (576, 32), (144, 64))))
    assert big.copy_instructions(HELIUM_COPY_COSTS["3x3"]) > HELIUM_COPY_COSTS["3x3"].inlined * INSTRUCTIONS_PER_BYTE
    assert _sharing({"3x3": (big, *others)}) == {"3x3": frozenset(use.kernel for use in others)}


def test_a_form_without_a_copy_is_never_shared():
    uses = {"5x5": tuple(KernelUse(f"dw{index}", 1, 16, 16, 25) for index in range(5))}
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
