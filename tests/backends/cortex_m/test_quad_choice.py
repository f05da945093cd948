"""The bundle's choice of the DSP cores' quad tiles (backends/cortex_m/schedules/quad_tiles.py: ``quad_uses``,
``quad_kernels``; backends/cortex_m/schedules/__init__.py: ``dsp_bundle_choice``; the second schedule of
tvm_ext/lower.py's ScheduleKernels): a kernel's loops of pair calls become quad calls where the instructions they
save per inference pay their inlined code at the schedules' one price of code (``code_price.INSTRUCTIONS_PER_BYTE``),
the bundle's first loop charged QUAD_FIRST_LOOP_BYTES, each other QUAD_FURTHER_LOOP_BYTES.

- The decision on facts alone: a kernel below the price of its further loops is declined however many others pay, and
  the choice goes on past it; the kernels taken pay the first loop's extra code together, or none is taken; the
  cost model's savings grow with the pairs and an odd count's last quad pays for the pair it computes again.
- Compiled for cortex-m4f and run bit for bit with TFLite Micro under QEMU mps2-an386: 1x1 convolutions on 16
  input channels, one over a 24x24 image (some 152,000 instructions saved for about 500 B: taken), one over a
  4x4 image (some 4,200: declined) and twenty over one-row images (declined), each its own kernel; and the same
  with a 22x23 image (253 pairs, an odd count: taken, its last quad overlapping the previous pair).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from backends.code_price import INSTRUCTIONS_PER_BYTE
from backends.cortex_m.schedules.quad_tiles import (QUAD_FIRST_LOOP_BYTES, QUAD_FURTHER_LOOP_BYTES, QuadUse,
                                                     quad_code_budget, quad_kernels, quad_saved_instructions)

FIRST = QUAD_FIRST_LOOP_BYTES * INSTRUCTIONS_PER_BYTE
"""The instructions the bundle's first loop of quads must save to pay its code."""
FURTHER = QUAD_FURTHER_LOOP_BYTES * INSTRUCTIONS_PER_BYTE
"""The instructions each further loop must save."""
ONE_ROW_WIDTHS = tuple(range(1, 21))
"""The widths of one-row images beside the QEMU tests' two square ones: twenty more 1x1 kernels of a few pixels each
(none paying the quad), so the bundle of 22 kernels gives the budget room for the first loop (``quad_code_budget``)."""


def test_a_kernel_below_the_price_is_declined_and_the_choice_goes_on():
    uses = (QuadUse("big", 3 * FIRST, 1), QuadUse("small", FURTHER - 1, 1), QuadUse("wide", 3 * FURTHER, 3),
            QuadUse("exact", FURTHER, 1))
    assert quad_kernels(uses) == {"big", "wide", "exact"}


def test_together_the_kernels_pay_the_first_loop():
    # each pays a further loop; the first loop's extra code is paid by their surplus together, or no quad is taken
    extra = FIRST - FURTHER
    assert quad_kernels((QuadUse("one", FURTHER + extra // 2, 1), QuadUse("two", 2 * FURTHER + extra // 2, 2))) \
        == {"one", "two"}
    assert quad_kernels((QuadUse("one", FURTHER + extra // 2, 1), QuadUse("two", 2 * FURTHER + extra // 2 - 1, 2))) \
        == set()
    assert quad_kernels((QuadUse("alone", FIRST, 1),)) == {"alone"}
    assert quad_kernels((QuadUse("alone", FIRST - 1, 1), QuadUse("small", FURTHER - 1, 1))) == set()


def test_the_budget_takes_the_best_paying_first_and_passes_over_a_kernel_it_cannot_hold():
    # the first loop's extra code is charged once; "wide" (three further loops) pays most in all but not per byte
    extra = QUAD_FIRST_LOOP_BYTES - QUAD_FURTHER_LOOP_BYTES
    uses = (QuadUse("best", 10 * FIRST, 1), QuadUse("wide", 20 * FIRST, 3), QuadUse("next", 5 * FIRST, 1))
    assert quad_kernels(uses, code_budget=extra + 2 * QUAD_FURTHER_LOOP_BYTES) == {"best", "next"}
    assert quad_kernels(uses, code_budget=extra + 2 * QUAD_FURTHER_LOOP_BYTES - 1) == {"best"}
    assert quad_kernels(uses, code_budget=extra + QUAD_FURTHER_LOOP_BYTES - 1) == set()
    assert quad_kernels(uses) == {"best", "wide", "next"}


def test_the_bundle_budget_holds_a_first_loop_only_in_a_bundle_of_many_kernels():
    # a 15-kernel bundle (pretrainedResnet_quant's) cannot hold a first loop; the QEMU tests' 22-kernel bundles can
    assert quad_code_budget(15) < QUAD_FIRST_LOOP_BYTES <= quad_code_budget(len(ONE_ROW_WIDTHS) + 2)


def test_the_saving_grows_with_the_pairs_and_an_odd_count_pays_its_pair_again():
    # a 1x1 window on 16 channels (four groups of four), 32 output channels
    even = quad_saved_instructions(12, 1, 16, 32)
    assert even > 0 and quad_saved_instructions(24, 1, 16, 32) == 2 * even
    assert quad_saved_instructions(13, 1, 16, 32) < quad_saved_instructions(14, 1, 16, 32)


# --- compiled for cortex-m4f, bit-exact under QEMU ----------------------------------------------------------------

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from emulator.tools import missing_tools  # noqa: E402
from test_requantize_epilogue import bit_exact_bundle  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor, build  # noqa: E402

VALID = 1  # tflite.Padding


def _pointwise_model(images: tuple[tuple[int, int], ...] = ((24, 24), (4, 4), *((1, w) for w in ONE_ROW_WIDTHS)),
                     channels: int = 16, out: int = 32, seed: int = 29) -> bytes:
    """Per (height, width) of ``images``, one int8 input [1, height, width, channels] (zero point -3) through a 1x1
    CONV_2D to ``out`` channels (int32 biases; the lowering narrows them to int16 where they fit), each a model
    output: one kernel per image shape."""
    rng = np.random.default_rng(seed)
    inputs = [Tensor(f"input{h}x{w}", (1, h, w, channels), "int8", Quantization((0.05,), (-3,))) for h, w in images]
    model = Model(inputs, [], tuple(range(len(inputs))), ())
    for index, (height, width) in enumerate(images):
        scales = tuple(0.004 + 0.001 * (o % 5) for o in range(out))
        first = len(model.tensors)
        model.tensors += [
            Tensor(f"op{index}/weights", (out, 1, 1, channels), "int8", Quantization(scales, (0,) * out, 0),
                   rng.integers(-127, 128, (out, 1, 1, channels)).astype(np.int8)),
            Tensor(f"op{index}/bias", (out,), "int32", Quantization(tuple(0.05 * s for s in scales), (0,) * out, 0),
                   rng.integers(-3000, 3000, out).astype(np.int32)),
            Tensor(f"op{index}/output", (1, height, width, out), "int8", Quantization((0.3,), (5,)))]
        options = Options("Conv2DOptions", {"Padding": VALID, "StrideW": 1, "StrideH": 1,
                                            "DilationWFactor": 1, "DilationHFactor": 1})
        model.operators.append(Operator("CONV_2D", (index, first, first + 1), (first + 2,), options, 3))
        model.outputs += (first + 2,)
    return build(model)


@pytest.mark.skipif(bool(missing_tools()), reason="needs arm-none-eabi-gcc and qemu-system-arm")
def test_the_paying_kernel_takes_the_quad_and_the_small_one_declines_bit_exactly(tmp_path):
    _, kernels = bit_exact_bundle(tmp_path, "pointwise", _pointwise_model(), "cortex-m4f", "mps2-an386")
    # the 24x24 layer's 288 pairs as 144 quad calls; the 4x4 layer's 8 pairs (and the one-row layers') keep their
    # pair calls
    quads = re.findall(r"_quad_tiles_s8(?:_b16)?\((.*)\);", kernels)
    assert len(quads) == 1, kernels
    assert quads[0].split(", ")[-1] == "32"
    assert re.search(r"_pair_tiles_s8(?:_b16)?\(", kernels), kernels


@pytest.mark.skipif(bool(missing_tools()), reason="needs arm-none-eabi-gcc and qemu-system-arm")
def test_an_odd_count_of_pairs_takes_the_quad_with_its_last_quad_overlapping_bit_exactly(tmp_path):
    # a 22x23 layer: 506 pixels, 253 pairs (odd), paying as the 24x24 one does; its last quad starts one pair early
    # (quad_tiles' Min(quad * 2, pairs - 2)), that pair's outputs computed twice, the same values
    model = _pointwise_model(((22, 23), (4, 4), *((1, w) for w in ONE_ROW_WIDTHS)))
    _, kernels = bit_exact_bundle(tmp_path, "pointwise_odd", model, "cortex-m4f", "mps2-an386")
    quads = re.findall(r"_quad_tiles_s8(?:_b16)?\((.*)\);", kernels)
    assert len(quads) == 1, kernels
    assert quads[0].split(", ")[-1] == "32"
    # (253 + 1) / 2 = 127 quads, each starting at pair min(2 * quad, 251)
    assert re.search(r"_quad < 127;", kernels), kernels
    assert "(251)" in quads[0], quads[0]
