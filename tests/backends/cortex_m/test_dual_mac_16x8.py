"""The dual MAC on TFLite's 16x8 operators (int16 activations, int8 weights, int64 bias): where the weights bound
every sum of products within int32 (32768 * the channel's sum of |w|, tvm_ext/transform/int8/mac.py), CONV_2D
and FULLY_CONNECTED accumulate in int32 and, on cortex-m4f, call `<prefix>_dual_mac_s16x4_w16` over their weights
widened to int16 at compile time (backends/cortex_m/helpers/templates/dual_mac_w16.h.in: a word of int16 inputs by a
word of weights, one SMLAD), one pixel per call, their output channels padded to whole tiles of four, and
DEPTHWISE_CONV_2D calls
`<prefix>_depthwise_mac_s16x4` (backends/cortex_m/helpers/depthwise_mac_c.py: each channel's int16 input half beside its SXTB16
weight half), bit-exact with TFLite Micro under QEMU and on the host; a layer whose bound exceeds int32 keeps its
int64 sums and stays bit-exact on inputs that would wrap an int32 sum.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from tflite.Padding import Padding  # noqa: E402

from test_dual_mac import OBJDUMP, _functions_with, _strict_build, bit_exact_on_cortex_m4f  # noqa: E402
from test_int8_elementwise_ops import assert_bit_exact_with_tflite_micro  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor, build  # noqa: E402
from tvm_ext.compile import compile  # noqa: E402

INPUT, WEIGHT_SCALE = Quantization((0.0004,), (0,)), 0.001


def _operator(tensors: list[Tensor], name: str, builtin: str, in_shape: tuple[int, ...], weights: np.ndarray,
              out_shape: tuple[int, ...], options: Options, bias_seed: int,
              channel_axis: int = 0, scale_step: float = 0.0) -> tuple[int, Operator, int]:
    """(graph input, the 16x8 ``builtin`` on it with ``weights`` (output channels along ``channel_axis``, channel c's
    scale WEIGHT_SCALE * (1 + c * scale_step): with a step, a multiplier per channel) and a random int64 bias, graph
    output)."""
    channels = weights.shape[channel_axis]
    scales = tuple(WEIGHT_SCALE * (1 + c * scale_step) for c in range(channels))
    first = len(tensors)
    tensors += [
        Tensor(f"{name}_in", in_shape, "int16", INPUT),
        Tensor(f"{name}_w", weights.shape, "int8", Quantization(scales, (0,) * channels, channel_axis), weights),
        Tensor(f"{name}_b", (channels,), "int64",
               Quantization(tuple(INPUT.scales[0] * scale for scale in scales), (0,) * channels, 0),
               np.random.default_rng(bias_seed).integers(-100_000, 100_001, channels).astype(np.int64)),
        Tensor(f"{name}_out", out_shape, "int16", Quantization((0.05,), (0,)))]
    return first, Operator(builtin, (first, first + 1, first + 2), (first + 3,), options, 3), first + 3


def _conv_options(padding: int, stride: int = 1) -> Options:
    return Options("Conv2DOptions", {"Padding": padding, "StrideH": stride, "StrideW": stride})


def dual_mac_model(scale_step: float = 0.0) -> Model:
    """Small sums (random weights): a VALID 3x3 CONV_2D on 7 channels (rows at odd element offsets, 63 MACs
    per output: an int8 one would take two pixels per call), a 1x1 one on 6 channels (a tail of two) into 7
    channels (padded to 8: the last tile's fourth sum is never stored), a SAME 3x3 one (the interior between
    border tests) and a FULLY_CONNECTED of 13 inputs into 10 units (padded to 12); weight scales per channel
    `scale_step` apart (`_operator`)."""
    rng = np.random.default_rng(16)
    tensors: list[Tensor] = []
    parts = [
        ("valid", "CONV_2D", (1, 6, 6, 7), (8, 3, 3, 7), (1, 4, 4, 8), _conv_options(Padding.VALID)),
        ("one_by_one", "CONV_2D", (1, 5, 5, 6), (7, 1, 1, 6), (1, 5, 5, 7), _conv_options(Padding.VALID)),
        ("same", "CONV_2D", (1, 6, 7, 5), (8, 3, 3, 5), (1, 6, 7, 8), _conv_options(Padding.SAME)),
        ("dense", "FULLY_CONNECTED", (2, 13), (10, 13), (2, 10), Options("FullyConnectedOptions", {})),
    ]
    inputs, operators, outputs = [], [], []
    for seed, (name, builtin, in_shape, w_shape, out_shape, options) in enumerate(parts):
        weights = rng.integers(-127, 128, w_shape).astype(np.int8)
        graph_in, operator, graph_out = _operator(tensors, name, builtin, in_shape, weights, out_shape, options, seed,
                                                  scale_step=scale_step)
        inputs.append(graph_in), operators.append(operator), outputs.append(graph_out)
    return Model(tensors, operators, tuple(inputs), tuple(outputs))


DEPTH = 600  # 127 * 600 * 32767 > 2^31: a 1x1 window of these weights can wrap an int32 sum


def wide_sum_model() -> tuple[Model, np.ndarray]:
    """A 1x1 CONV_2D whose weights are +-127 over DEPTH channels (its bound exceeds int32), and an input whose
    first pixel matches the signs of output channel 0's weights at full scale (a sum of 2.5e9)."""
    signs = np.where(np.random.default_rng(7).integers(0, 2, (4, 1, 1, DEPTH)) == 0, -1, 1)
    tensors: list[Tensor] = []
    graph_in, operator, graph_out = _operator(tensors, "wide", "CONV_2D", (1, 1, 2, DEPTH),
                                              (127 * signs).astype(np.int8), (1, 1, 2, 4),
                                              _conv_options(Padding.VALID), 9)
    value = np.zeros((1, 1, 2, DEPTH), np.int16)
    value[0, 0, 0] = 32767 * signs[0, 0, 0]
    value[0, 0, 1] = -32768 * signs[1, 0, 0]
    return Model(tensors, [operator], (graph_in,), (graph_out,)), value


def _depthwise_options(padding: int, stride: int = 1, multiplier: int = 1) -> Options:
    return Options("DepthwiseConv2DOptions", {"Padding": padding, "StrideH": stride, "StrideW": stride,
                                              "DepthMultiplier": multiplier})


def depthwise_model() -> Model:
    """16x8 DEPTHWISE_CONV_2D, small sums (random weights): a SAME 3x3 one on 8 channels (an interior of whole
    windows, a border of clipped ones), a SAME 3x3 one of stride 2 on 12 channels at odd sizes, and two that keep
    scalar loops, as their int8 twins do: a VALID 2x3 one on 6 channels (four does not divide them: no channel
    tile) and one of depth multiplier 2 (two output channels read one input channel)."""
    rng = np.random.default_rng(61)
    tensors: list[Tensor] = []
    parts = [
        ("same", (1, 7, 6, 8), (1, 3, 3, 8), (1, 7, 6, 8), _depthwise_options(Padding.SAME)),
        ("strided", (1, 9, 7, 12), (1, 3, 3, 12), (1, 5, 4, 12), _depthwise_options(Padding.SAME, 2)),
        ("six", (1, 5, 6, 6), (1, 2, 3, 6), (1, 4, 4, 6), _depthwise_options(Padding.VALID)),
        ("multiplier", (1, 5, 5, 4), (1, 3, 3, 8), (1, 3, 3, 8), _depthwise_options(Padding.VALID, 1, 2)),
    ]
    inputs, operators, outputs = [], [], []
    for seed, (name, in_shape, w_shape, out_shape, options) in enumerate(parts):
        weights = rng.integers(-127, 128, w_shape).astype(np.int8)
        graph_in, operator, graph_out = _operator(tensors, name, "DEPTHWISE_CONV_2D", in_shape, weights, out_shape,
                                                  options, seed, channel_axis=3)
        inputs.append(graph_in), operators.append(operator), outputs.append(graph_out)
    return Model(tensors, operators, tuple(inputs), tuple(outputs))


WIDE_WINDOW = 23  # 127 * 23 * 23 * 32767 > 2^31: a window of these weights can wrap an int32 sum


def wide_depthwise_model() -> tuple[Model, np.ndarray]:
    """A VALID 23x23 DEPTHWISE_CONV_2D on 4 channels whose weights are +-127 (its bound exceeds int32), and an
    input that matches the signs of every channel's weights at full scale (sums of 2.2e9)."""
    shape = (1, WIDE_WINDOW, WIDE_WINDOW, 4)
    signs = np.where(np.random.default_rng(8).integers(0, 2, shape) == 0, -1, 1)
    tensors: list[Tensor] = []
    graph_in, operator, graph_out = _operator(tensors, "wide_dw", "DEPTHWISE_CONV_2D", shape,
                                              (127 * signs).astype(np.int8), (1, 1, 1, 4),
                                              _depthwise_options(Padding.VALID), 10, channel_axis=3)
    value = (32767 * signs).astype(np.int16)
    value[..., 1] = -32768 * signs[..., 1]
    return Model(tensors, [operator], (graph_in,), (graph_out,)), value


@dataclass(frozen=True)
class HelperCase:
    """A 16x8 model whose MACs a DSP core runs on a helper: the helper calls its kernel C makes at least (C
    name suffix -> count), how many of its kernel functions call the first of them at least, an instruction
    only that helper's DSP path uses, and the model whose sums pass int32 (with an input that reaches them)."""

    model: Callable[[], Model]
    calls: dict[str, int]
    calling_kernels: int
    instruction: str
    wide: Callable[[], tuple[Model, np.ndarray]]


HELPER_CASES = {
    # each operator's call over widened weights (the SAME one's interior), the padded 1x1 and FULLY_CONNECTED too
    # (else their scalar loops); smlad: the helper's word pairs (the portable path multiplies halves)
    "conv": HelperCase(dual_mac_model, {"_dual_mac_s16x4_w16(": 4}, 4, "smlad", wide_sum_model),
    # the SAME ones' whole windows and clipped border windows; smlatb: a channel's halves
    "depthwise": HelperCase(depthwise_model, {"_depthwise_mac_s16x4(": 2, "_depthwise_box_s16x4(": 1}, 2, "smlatb",
                            wide_depthwise_model),
}


def _kernels_calling(kernels_c: str, call: str) -> int:
    """How many kernel function definitions of a bundle's kernels C (each starts at a line ``void ...(``) call
    `call`."""
    return sum(call in definition for definition in kernels_c.split("\nvoid ")[1:])


@pytest.mark.skipif(shutil.which(OBJDUMP) is None, reason="arm-none-eabi binutils are not installed")
@pytest.mark.parametrize("case", HELPER_CASES.values(), ids=HELPER_CASES)
def test_16x8_kernels_call_their_helper_on_cortex_m4f_bit_exactly(case, tmp_path):
    board = bit_exact_on_cortex_m4f(tmp_path, "helper_16x8", build(case.model()))
    kernels = (board.out_dir / f"{board.plan.model}_kernels.c").read_text()
    for call, count in case.calls.items():
        assert kernels.count(call) >= count, (call, kernels)
    assert _kernels_calling(kernels, next(iter(case.calls))) == case.calling_kernels, kernels
    assert "int64_t acc" not in kernels  # every sum is int32
    assert _functions_with(board.out_dir / f"lib{board.plan.model}.a", case.instruction)
    _strict_build(board.out_dir, tmp_path / "arm", [])  # the DSP path, warning-free with arm-none-eabi-gcc
    host = _strict_build(board.out_dir, tmp_path / "host", ["CC=gcc", "CFLAGS=-std=c99 -O2", "LDFLAGS="])
    assert "PASS" in host.stdout, host.stdout  # the portable path of the same C


@pytest.mark.parametrize("case", HELPER_CASES.values(), ids=HELPER_CASES)
def test_16x8_int32_sums_are_bit_exact_with_tflite_micro_on_the_host(case, tmp_path):
    assert_bit_exact_with_tflite_micro(case.model(), tmp_path)


@pytest.mark.parametrize("case", HELPER_CASES.values(), ids=HELPER_CASES)
def test_16x8_sums_beyond_int32_stay_int64(case, tmp_path):
    model, value = case.wide()
    (tmp_path / "host").mkdir()
    assert_bit_exact_with_tflite_micro(model, tmp_path / "host", inputs=[value])
    path = tmp_path / "wide.tflite"
    path.write_bytes(build(model))
    board = compile(path, "cortex-m4f", tmp_path / "m4f")
    assert board.selftest.passed, board.selftest.output
    kernels = (board.out_dir / f"{board.plan.model}_kernels.c").read_text()
    assert "int64_t acc" in kernels and "depthwise_mac" not in kernels and "dual_mac" not in kernels


@pytest.mark.parametrize("target", ["cortex-m55", "rv32imc"])
def test_16x8_tiles_call_the_fused_copy_on_helium_and_rv32_bit_exactly(target, tmp_path):
    """The 16x8 helper model's VALID 3x3, padded 1x1 and FULLY_CONNECTED kernels (per-channel multipliers: a per-tensor
    layer's constant one keeps its loop) each call the fused 16x8 tiles' one out-of-line copy (`backends.cortex_m.schedules.tiles_16x8`) on cortex-m55 (the Helium loop) and rv32imc
    (its portable loop, tiles of four), their last tiles of fewer channels too; the emulated self-test is bit-exact with the
    compile's reference (TFLite's)."""
    path = tmp_path / "helper_16x8.tflite"
    path.write_bytes(build(dual_mac_model(scale_step=0.01)))  # a multiplier per channel, as a converter's
    board = compile(path, target, tmp_path / target)
    assert board.selftest.passed, board.selftest.output
    kernels = (board.out_dir / f"{board.plan.model}_kernels.c").read_text()
    assert _kernels_calling(kernels, "_tiles_s16x4(") >= 3, kernels


def depthwise_then_conv_model() -> Model:
    """A DS-CNN's 16x8 pair of layers on a 25x5 image of 40 channels, side by side: a SAME 3x3 DEPTHWISE_CONV_2D (its
    border's taps outside the image through RV32's padding helper) and a 1x1 CONV_2D with a multiplier per channel
    (the fused 16x8 tiles)."""
    rng = np.random.default_rng(62)
    tensors: list[Tensor] = []
    depthwise_in, depthwise, depthwise_out = _operator(
        tensors, "dw", "DEPTHWISE_CONV_2D", (1, 25, 5, 40), rng.integers(-127, 128, (1, 3, 3, 40)).astype(np.int8),
        (1, 25, 5, 40), _depthwise_options(Padding.SAME), 0, channel_axis=3, scale_step=0.01)
    conv_in, conv, conv_out = _operator(
        tensors, "conv", "CONV_2D", (1, 25, 5, 40), rng.integers(-127, 128, (40, 1, 1, 40)).astype(np.int8),
        (1, 25, 5, 40), _conv_options(Padding.VALID), 1, scale_step=0.01)
    return Model(tensors, [depthwise, conv], (depthwise_in, conv_in), (depthwise_out, conv_out))


@pytest.mark.parametrize("target", ["rv32imc", "rv32imafc"])
def test_16x8_tiles_build_beside_rv32s_own_helpers_bit_exactly(target, tmp_path):
    """An RV32 bundle whose 16x8 kernels call both the fused 16x8 tiles and RV32's own helpers (the depthwise
    padding's) builds and is bit-exact: the tiles' library there needs no Cortex-M library, whose requantization
    epilogue has RV32's names with another contract (`backends.riscv.helpers.RISCV_TILES_16X8_HELPERS`; with the
    Cortex-M one beside RV32's the bundle did not build: conflicting types for `<prefix>_requantize_small_lane`; a
    Cortex-M library in an RV32 bundle is now refused: tests/backends/test_helper_families.py)."""
    path = tmp_path / "depthwise_then_conv_16x8.tflite"
    path.write_bytes(build(depthwise_then_conv_model()))
    board = compile(path, target, tmp_path / target)
    assert board.selftest.passed, board.selftest.output
    kernels = (board.out_dir / f"{board.plan.model}_kernels.c").read_text()
    assert _kernels_calling(kernels, "_tiles_s16x4(") >= 1 and _kernels_calling(kernels, "_depthwise_pad_s8x8(") >= 1, \
        kernels
