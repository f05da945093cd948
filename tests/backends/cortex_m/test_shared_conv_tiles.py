"""The bundle's choice of the kernels that call the fused channel tiles' out-of-line copy on Helium cores
(backends/cortex_m/schedules/shared_conv_tiles.py: ``conv_tiles_uses``, ``shared_conv_tiles``;
backends/cortex_m/schedules/__init__.py: ``helium_bundle_choice``): a kernel calls the copy where its inlined code
weighs more than the copy's calls cost, where the copy and those calls weigh less than their inlined code, from
the facts of every kernel of the bundle.

- The decision on facts alone: one kernel keeps the tiles inlined (the copy would only add its calls); several
  small kernels share the copy; a kernel the copy would slow most keeps them inlined; each bias type pays its own
  copy, none where the bundle holds it already; a kernel of both bias types calls the copies only where both pay.
- The facts read from a scheduled kernel: the fused call's executions, tiles and vectors.
- Compiled for cortex-m55 and run bit for bit with TFLite Micro under QEMU mps3-an547: a chain of small 1x1
  layers of different shapes (one kernel each) calls the copy, not the inlined tiles.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from tvm.script import tirx as T

from backends.cortex_m.schedules.code_price import INSTRUCTIONS_PER_BYTE
from backends.cortex_m.schedules.conv_tiles import CONV_TILES_OPS, SHARED_CONV_TILES_OPS
from backends.cortex_m.schedules.shared_conv_tiles import (COPY_BYTES, INLINED_BYTES, ConvTilesUse, conv_tiles_uses,
                                                           shared_conv_tiles)


def _fc(kernel: str, pixels: int = 49, tiles: int = 15, vectors: int = 4, calls: int = 1) -> ConvTilesUse:
    """vit3h_28's 49-row fully connected kernel of 60 inputs and 60 channels by default."""
    return ConvTilesUse(kernel, calls, pixels, tiles, vectors)


def test_one_kernel_keeps_the_tiles_inlined():
    assert _fc("fc").gain() > 0
    assert _fc("fc").gain() < COPY_BYTES * INSTRUCTIONS_PER_BYTE
    assert shared_conv_tiles({"int16": (_fc("fc"),)}) == frozenset()


def test_several_small_kernels_share_the_copy():
    # vit3h_28's five int16-bias fully connected kernels (measured: 1,416 B less code, 43,766 instructions more)
    uses = {"int16": (*(_fc(f"fc{index}") for index in range(4)), _fc("fc100", tiles=25))}
    assert shared_conv_tiles(uses) == frozenset({"fc0", "fc1", "fc2", "fc3", "fc100"})


def test_a_kernel_the_copy_would_slow_most_keeps_the_tiles_inlined():
    # vit3h_28's fully connected kernel of 240 inputs (15 vectors a tile; measured 85,438 -> 116,203 instructions)
    big = _fc("mlp", vectors=15)
    assert big.extra_instructions() > INLINED_BYTES * INSTRUCTIONS_PER_BYTE
    uses = {"int32": (big, *(_fc(f"fc{index}") for index in range(4)))}
    assert shared_conv_tiles(uses) == frozenset(f"fc{index}" for index in range(4))
    # kws_ref_model's 1x1 kernel: 125 pixels, 16 tiles of 4 vectors, called four times
    small = tuple(_fc(f"fc{index}") for index in range(3))
    assert shared_conv_tiles({"int32": (_fc("pw", pixels=125, tiles=16, calls=4), *small)}) \
        == frozenset(use.kernel for use in small)


def test_each_bias_type_pays_its_own_copy_unless_the_bundle_holds_it():
    uses = {"int32": tuple(_fc(f"fc{index}") for index in range(3)), "int16": (_fc("fc16"),)}
    assert shared_conv_tiles(uses) == frozenset({"fc0", "fc1", "fc2"})
    # the int16 copy there already (a padded convolution's merged calls: common_tails): the lone kernel calls it
    assert shared_conv_tiles(uses, present=frozenset({"int16"})) == frozenset({"fc0", "fc1", "fc2", "fc16"})


def test_a_kernel_of_both_bias_types_calls_the_copies_only_where_both_pay():
    uses = {"int32": tuple(_fc(f"fc{index}") for index in range(3)), "int16": (_fc("fc0"),)}
    assert shared_conv_tiles(uses) == frozenset({"fc1", "fc2"})


@T.prim_func(s_tir=True)
def _kernel(x: T.Buffer((98,), "int8"), w: T.Buffer((144,), "int8"), b: T.Buffer((12,), "int32"),
            m: T.Buffer((12,), "int32"), sh: T.Buffer((12,), "int8"), out: T.Buffer((84,), "int8")):
    for n in range(7):
        T.evaluate(T.call_intrin("int32", CONV_TILES_OPS["int32"], T.address_of(out[n * 12]),
                                 T.address_of(x[n * 14]), T.address_of(w[0]), T.address_of(b[0]),
                                 T.address_of(m[0]), T.address_of(sh[0]), 3, 14, 12, 1, 12, 12))
    for n in range(2):
        T.evaluate(T.call_intrin("int32", SHARED_CONV_TILES_OPS["int16"], T.address_of(out[n * 12]),
                                 T.address_of(x[n * 14]), T.address_of(w[0]), T.address_of(b[0]),
                                 T.address_of(m[0]), T.address_of(sh[0]), 3, 14, 12, 1, 12, 12))


def test_the_facts_of_a_scheduled_kernel():
    # 7 pixels of 12 channels (3 tiles) over one row of 12 inputs (one vector); the int16 copy already called
    uses, present = conv_tiles_uses({"k": _kernel}, {"k": 2})
    assert uses == {"int32": (ConvTilesUse("k", 2, 7, 3, 1),)}
    assert present == frozenset({"int16"})


# --- compiled for cortex-m55, bit-exact under QEMU ------------------------------------------------------------

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from test_requantize_epilogue import bit_exact_bundle, needs_cross_tools  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor, build  # noqa: E402


def _pointwise_chain(widths: tuple[int, ...] = (12, 20, 28, 16), image: tuple[int, int] = (3, 3),
                     seed: int = 5) -> bytes:
    """One int8 input [1, *image, widths[0]] through 1x1 CONV_2D layers to each next width (one kernel each)."""
    rng = np.random.default_rng(seed)
    model = Model([Tensor("input", (1, *image, widths[0]), "int8", Quantization((0.05,), (-3,)))], [], (0,), ())
    source = 0
    for index, (inputs, outputs) in enumerate(zip(widths, widths[1:])):
        scales = tuple(0.003 + 0.001 * (o % 4) for o in range(outputs))
        first = len(model.tensors)
        model.tensors += [
            Tensor(f"op{index}/weights", (outputs, 1, 1, inputs), "int8",
                   Quantization(scales, (0,) * outputs, 0),
                   rng.integers(-127, 128, (outputs, 1, 1, inputs)).astype(np.int8)),
            Tensor(f"op{index}/bias", (outputs,), "int32",
                   Quantization(tuple(0.05 * s for s in scales), (0,) * outputs, 0),
                   rng.integers(-2000, 2000, outputs).astype(np.int32)),
            Tensor(f"op{index}/output", (1, *image, outputs), "int8", Quantization((0.06,), (2,)))]
        options = Options("Conv2DOptions", {"Padding": 1, "StrideW": 1, "StrideH": 1})
        model.operators.append(Operator("CONV_2D", (source, first, first + 1), (first + 2,), options))
        source = first + 2
    model.outputs = (source,)
    return build(model)


@needs_cross_tools
def test_small_pointwise_kernels_call_the_copy_bit_exactly(tmp_path):
    _, kernels = bit_exact_bundle(tmp_path, "pointwise", _pointwise_chain(), "cortex-m55", "mps3-an547")
    assert len(re.findall(r"_conv_tiles_shared_s8(?:_b16)?\(", kernels)) == 3, kernels
    assert not re.search(r"_conv_tiles_s8(?:_b16)?\(", kernels), kernels
