"""The bundle's choice of the kernels that call the fused channel tiles' out-of-line copy on Helium cores
(backends/cortex_m/schedules/shared_conv_tiles.py: ``conv_tiles_uses``, ``shared_conv_tiles``;
backends/cortex_m/schedules/__init__.py: ``helium_bundle_choice``): a kernel calls the copy where its inlined code
weighs more than the copy's calls cost, where the copy and those calls weigh less than their inlined code, from
the facts of every kernel of the bundle.

- The decision on facts alone: one kernel keeps the tiles inlined (the copy would only add its calls); several
  small kernels of one window but for their channels share the copy, of different row windows not; a kernel the copy would slow most keeps them
  inlined; each bias type pays its own copy, and none joins a copy the bundle holds already; a kernel of two windows
  keeps them inlined.
- The facts read from a scheduled kernel: the fused call's executions, tiles and vectors.
- Compiled for cortex-m55 and run bit for bit with TFLite Micro under QEMU mps3-an547: a chain of small 1x1
  layers of one shape (one kernel each) calls the copy, not the inlined tiles.
"""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest
from tvm.script import tirx as T

from backends.code_price import INSTRUCTIONS_PER_BYTE
from backends.cortex_m.schedules.conv_tiles import CONV_TILES_OPS, SHARED_CONV_TILES_OPS
from backends.cortex_m.schedules.shared_conv_tiles import (COPY_BYTES, GENERIC_TILE_INSTRUCTIONS, INLINED_BYTES,
                                                           SPILL_VECTOR_INSTRUCTIONS, ConvTilesUse, conv_tiles_uses,
                                                           generic_conv_tiles, generic_gain, generic_tile_instructions,
                                                           shared_conv_tiles)


def _fc(kernel: str, pixels: int = 49, tiles: int = 15, vectors: int = 4, calls: int = 1,
        window: tuple[int, ...] = (0, 60, 1, 60, 60)) -> ConvTilesUse:
    """vit3h_28's 49-row fully connected kernel of 60 inputs and 60 channels by default."""
    return ConvTilesUse(kernel, calls, pixels, tiles, vectors, window)


def test_one_kernel_keeps_the_tiles_inlined():
    assert _fc("fc").gain() > 0
    assert _fc("fc").gain() < COPY_BYTES * INSTRUCTIONS_PER_BYTE
    assert shared_conv_tiles({"int16": (_fc("fc"),)}) == frozenset()


def test_several_small_kernels_of_one_row_window_share_the_copy():
    # vit3h_28's four int16-bias fully connected kernels 60 -> 60 share it, and its 60 -> 100 one: the same rows (the
    # copy's row loop specialized on them), the channels only count its tiles; a kernel of another row length (a
    # copy its callers' sizes would not specialize) keeps the tiles inlined
    uses = {"int16": (*(_fc(f"fc{index}") for index in range(4)), _fc("fc100", tiles=25, window=(0, 60, 1, 60, 100)),
                      _fc("fc64", window=(0, 64, 1, 64, 60)))}
    assert _fc("fc64", window=(0, 64, 1, 64, 60)).gain() > 0
    assert shared_conv_tiles(uses) == frozenset({"fc0", "fc1", "fc2", "fc3", "fc100"})


def test_kernels_of_different_windows_keep_the_tiles_inlined():
    # densenet_bc_32's 8x8 1x1 kernels of 48 channels over 54 to 90 inputs: sharing one generic copy measured every
    # caller slower (some 100 instructions a tile)
    uses = {"int32": tuple(_fc(f"pw{inputs}", pixels=64, tiles=12, vectors=-(-inputs // 16),
                               window=(0, inputs, 1, inputs, 48)) for inputs in (54, 66, 78, 90))}
    assert shared_conv_tiles(uses) == frozenset()


def test_a_kernel_the_copy_would_slow_most_keeps_the_tiles_inlined():
    # vit3h_28's fully connected kernel of 240 inputs (15 vectors a tile; measured 85,438 -> 116,203 instructions)
    big = _fc("mlp", vectors=15)
    assert big.extra_instructions() > INLINED_BYTES * INSTRUCTIONS_PER_BYTE
    uses = {"int32": (big, *(_fc(f"fc{index}") for index in range(4)))}
    assert shared_conv_tiles(uses) == frozenset(f"fc{index}" for index in range(4))
    # kws_ref_model's 1x1 kernel: 125 pixels, 16 tiles of 4 vectors, called four times
    small = tuple(_fc(f"fc{index}", window=(0, 64, 1, 64, 64)) for index in range(3))
    assert shared_conv_tiles({"int32": (_fc("pw", pixels=125, tiles=16, calls=4, window=(0, 64, 1, 64, 64)),
                                        *small)}) == frozenset(use.kernel for use in small)


def test_each_bias_type_pays_its_own_copy_and_none_joins_a_copy_the_bundle_holds():
    uses = {"int32": tuple(_fc(f"fc{index}") for index in range(3)), "int16": (_fc("fc16"),)}
    assert shared_conv_tiles(uses) == frozenset({"fc0", "fc1", "fc2"})
    # the int32 copy there already (a padded convolution's merged calls: common_tails), specialized on its callers'
    # sizes: no kernel joins it
    assert shared_conv_tiles(uses, present=frozenset({"int32"})) == frozenset()


def test_kernels_of_any_window_call_a_copy_generic_over_windows_where_each_pays():
    # 3x3 LEAKY_RELU kernels whose border pixels call the table form's copy (outlined_borders: generic over their
    # windows). yolo_tiny_64x96_w9's, over three rows ending in a predicated vector (183 and 57 inputs), spill
    # inlined: they call the generic copy whatever their size, which two pay; yolo_tiny_80's over rows of 120 inputs
    # (eight lanes left, no predicate) keeps the tiles inlined; its 1x1 kernel of 25 pixels calls the borders' copy,
    # which its one row keeps specialized on one row, alone
    small = _fc("c4x6", pixels=24, tiles=26, vectors=36, window=(183, 549, 3, 183, 101))
    big = _fc("c16x24", pixels=384, tiles=10, vectors=12, window=(57, 171, 3, 57, 37))
    whole = _fc("c10x10", pixels=100, tiles=20, vectors=24, window=(120, 360, 3, 120, 80))
    pointwise = _fc("p5x5", pixels=25, tiles=20, vectors=10, window=(0, 160, 1, 160, 80))
    assert small.spills_inlined and big.spills_inlined and not whole.spills_inlined and not pointwise.spills_inlined
    assert small.gain() < 0 and big.gain() < 0  # specialized sharing would charge them its row loop's vectors
    assert generic_gain(big) > INLINED_BYTES * INSTRUCTIONS_PER_BYTE  # faster in the copy: its vectors spill inlined
    assert generic_gain(whole) < 0 < generic_gain(pointwise)
    table = frozenset({"int32+table"})
    uses = {"int32+table": (small, big, whole, pointwise)}
    assert generic_conv_tiles(uses, table) == (frozenset({"p5x5"}), frozenset({"c4x6", "c16x24"}))
    # one small kernel of several rows does not pay the generic copy's bytes (resnet18_w9_64's 16x16x9 over 27
    # inputs); one as large as yolo_tiny_64x96_w9's 16x24x37 does (measured 444,708 instructions fewer in the copy)
    few = _fc("c16x16", pixels=256, tiles=3, vectors=6, window=(27, 81, 3, 27, 9))
    assert few.spills_inlined and 0 < generic_gain(few) < COPY_BYTES * INSTRUCTIONS_PER_BYTE
    assert generic_conv_tiles({"int32+table": (few, pointwise)}, table) == (frozenset({"p5x5"}), frozenset())
    assert generic_conv_tiles({"int32+table": (big, pointwise)}, table) == (frozenset({"p5x5"}), frozenset({"c16x24"}))
    # only the forms whose copy the bundle holds generic; a kernel whose calls take another form besides keeps the
    # tiles inlined
    assert generic_conv_tiles(uses, frozenset()) == (frozenset(), frozenset())
    assert generic_conv_tiles({**uses, "int32": (_fc("p5x5"),)}, table) == (frozenset(), frozenset({"c4x6", "c16x24"}))
    # yolo_tiny_64x96_w9's 8x12x61 kernel: its border pixels' call (one row of 333 inputs) is the copy's already
    # where its borders are outlined, and counts nothing
    border = _fc("c16x24", pixels=384, tiles=10, vectors=11, window=(0, 171, 1, 171, 37))
    assert generic_gain(border) < 0
    pair = {"int32+table": (small, big, border)}
    # ... and not outlined, it runs in the generic copy with its interior, which spills inlined: the kernel pays
    assert generic_conv_tiles(pair, table) == (frozenset(), frozenset({"c4x6", "c16x24"}))
    assert generic_gain(border, spilling=True) > INLINED_BYTES * INSTRUCTIONS_PER_BYTE
    # a one-row call in a kernel that spills nowhere keeps its price: yolo_tiny_80's 10x10x80 kernel (rows of 120)
    whole_border = _fc("c10x10", pixels=100, tiles=20, vectors=23, window=(0, 360, 1, 360, 80))
    assert generic_conv_tiles({"int32+table": (few, whole, whole_border)}, table) == (frozenset(), frozenset())
    assert generic_conv_tiles(pair, table, frozenset({"c16x24"})) == (frozenset(), frozenset({"c4x6", "c16x24"}))


def test_a_spilling_kernel_prices_the_generic_copy_by_its_size():
    """Review F2. Before: a kernel whose inlined tiles spill (three rows ending in a predicated vector) was priced
    as running the generic copy for free, whatever its pixels, tiles and vectors: every such kernel gained
    INLINED_BYTES at the code price alone. Expected: the copy's price per tile (``generic_tile_instructions``)
    scales with the window's vectors (what the spill costs inlined) and the gain with the kernel's pixels and tiles:
    a window of few vectors pays the generic copy's tiles (a large enough kernel keeps the tiles inlined), one of
    many vectors runs faster in the copy, more so the larger the kernel."""
    few = _fc("c3", pixels=256, tiles=3, vectors=3, window=(9, 27, 3, 9, 9))  # 3 rows of 9 inputs
    many = _fc("c54", pixels=96, tiles=16, vectors=54, window=(273, 819, 3, 273, 61))  # 3 rows of 273 inputs
    assert few.spills_inlined and many.spills_inlined
    assert generic_tile_instructions(few) == GENERIC_TILE_INSTRUCTIONS - 3 * SPILL_VECTOR_INSTRUCTIONS > 0
    assert generic_tile_instructions(many) == GENERIC_TILE_INSTRUCTIONS - 54 * SPILL_VECTOR_INSTRUCTIONS < 0
    assert 0 < generic_gain(few) < INLINED_BYTES * INSTRUCTIONS_PER_BYTE
    assert generic_gain(replace(few, calls=100)) < 0
    assert INLINED_BYTES * INSTRUCTIONS_PER_BYTE < generic_gain(many) < generic_gain(replace(many, calls=2))
    # yolo_tiny_64x96_w9's 8x12x61 kernel: measured 1,816,676 inlined, 1,063,372 in the copy (753,304 fewer)
    assert generic_gain(many) - INLINED_BYTES * INSTRUCTIONS_PER_BYTE == 96 * 16 * 490


def test_a_kernel_of_two_windows_keeps_the_tiles_inlined():
    uses = {"int32": tuple(_fc(f"fc{index}") for index in range(4)), "int16": (_fc("fc0"),)}
    assert shared_conv_tiles(uses) == frozenset({"fc1", "fc2", "fc3"})


def test_the_facts_of_a_scheduled_kernel():
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

    # 7 pixels of 12 channels (3 tiles) over one row of 12 inputs (one vector); the int16 copy already called
    uses, present = conv_tiles_uses({"k": _kernel}, {"k": 2})
    assert uses == {"int32": (ConvTilesUse("k", 2, 7, 3, 1, (0, 12, 1, 12, 12)),)}
    assert present == frozenset({"int16"})


# --- compiled for cortex-m55, bit-exact under QEMU ------------------------------------------------------------

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from test_requantize_epilogue import bit_exact_bundle, needs_cross_tools  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor, build  # noqa: E402


def _pointwise_chain(strides: tuple[int, ...] = (2, 2, 1), channels: int = 16, image: tuple[int, int] = (8, 8),
                     seed: int = 5) -> bytes:
    """One int8 input [1, *image, channels] through 1x1 CONV_2D layers of ``channels`` outputs at each of
    ``strides``: kernels of different images (one each), every pixel's call of one window."""
    rng = np.random.default_rng(seed)
    model = Model([Tensor("input", (1, *image, channels), "int8", Quantization((0.05,), (-3,)))], [], (0,), ())
    source = 0
    for index, stride in enumerate(strides):
        image = (-(-image[0] // stride), -(-image[1] // stride))
        scales = tuple(0.003 + 0.001 * (o % 4) for o in range(channels))
        first = len(model.tensors)
        model.tensors += [
            Tensor(f"op{index}/weights", (channels, 1, 1, channels), "int8",
                   Quantization(scales, (0,) * channels, 0),
                   rng.integers(-127, 128, (channels, 1, 1, channels)).astype(np.int8)),
            Tensor(f"op{index}/bias", (channels,), "int32",
                   Quantization(tuple(0.05 * s for s in scales), (0,) * channels, 0),
                   rng.integers(-2000, 2000, channels).astype(np.int32)),
            Tensor(f"op{index}/output", (1, *image, channels), "int8", Quantization((0.06,), (2,)))]
        options = Options("Conv2DOptions", {"Padding": 1, "StrideW": stride, "StrideH": stride})
        model.operators.append(Operator("CONV_2D", (source, first, first + 1), (first + 2,), options))
        source = first + 2
    model.outputs = (source,)
    return build(model)


@needs_cross_tools
def test_small_pointwise_kernels_call_the_copy_bit_exactly(tmp_path):
    _, kernels = bit_exact_bundle(tmp_path, "pointwise", _pointwise_chain(), "cortex-m55", "mps3-an547")
    assert len(re.findall(r"_conv_tiles_shared_s8(?:_b16)?\(", kernels)) == 3, kernels
    assert not re.search(r"_conv_tiles_s8(?:_b16)?\(", kernels), kernels
