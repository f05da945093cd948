"""A float Conv that onnxruntime keeps inside a QDQ model sums as onnxruntime's MLAS: in its order, rounded as it rounds.

onnxruntime keeps a QDQ Conv group float when its bias scale is not x_scale * w_scale (test_onnx_qdq_bias_scale),
and quantizes the float Conv's output. MLAS's float convolution is an SGEMM over im2col's columns: each output
summed over (input channel, kernel row, kernel column) with fused multiply-adds (one rounding per step). C's
``acc + x * w`` rounds twice, and TOPI's schedule summed a KxK kernel's taps row first. Near a rounding tie of
the QuantizeLinear after the Conv, a different rounding or order gives an int8 result one apart (issue 28:
torchvision MNASNet 0.5's TorchScript export, whose Convs read other Convs' zero biases through Identity
nodes, 5 to 7 of its 10 outputs a few steps off on some inputs; SqueezeNet 1.1's 3x3 expand Convs). MLAS sums
more than 128 taps in blocks (fewer output pixels: longer blocks), each from zero, added to the output's sum:
one chain of SqueezeNet's 144 taps differs too (1 of its 20 full-range inputs one step off), and so does one
chain per output of a register tile of several outputs, as the schedule sums a 16-pixel-wide convolution
(ResNet18's layer1 3x3 Convs, 576 taps over 16x16 pixels: 8 of 20 full-range inputs a few steps off).

Each model is built here with an input on which MLAS's sum and the other sums quantize differently: its output
scale is chosen, by a search over the emulated sums, so that one output's sums lie on either side of a
quantization boundary. Random inputs reach such a case about once per million outputs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxruntime_match import mismatches, session
from tvm_ext.compile import compile
from tvm_ext.kernels.onnxruntime_elementwise import fma_float32

CHANNELS_OUT = 4
MLAS_BLOCK_TAPS = 128
"""The taps per block in which onnxruntime 1.32's MLAS sums every Conv here on one thread (measured against it:
its SGEMM's StrideK when the output pixels are at least the taps; a Conv of 128 taps or fewer is one block).
A literal, not the compiler's sgemm_stride_k: the emulation below must not follow the code it tests."""
X_SCALE = np.float32(2.0 ** -4)


@dataclass(frozen=True)
class Summation:
    """How a convolution sums each output: taps by channel first (MLAS's im2col order) or by kernel row first,
    each multiply-add rounded once (fused) or its product and sum rounded apart, and in MLAS's blocks of taps
    (each block summed from zero, then added to the output's sum) or in one chain."""

    channel_first: bool
    fused: bool
    blocked: bool = True


MLAS = Summation(channel_first=True, fused=True)


def _fma(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> np.ndarray:
    """fma_float32 elementwise: x * y + z of float32 arrays rounded to float32 once."""
    return np.vectorize(fma_float32, otypes=[np.float32])(x, y, z)


def _sums(x: np.ndarray, w: np.ndarray, how: Summation) -> np.ndarray:
    """The convolution of float ``x`` [C, H, W] by ``w`` [O, C, K, K] (stride 1, zero padding K // 2), each
    output summed from zero over its taps (im2col's zeros where they fall outside the input), as ``how`` says;
    MLAS's blocks of MLAS_BLOCK_TAPS as onnxruntime's mlas/lib/conv.cpp takes them on one thread."""
    channels, kernel = w.shape[1], w.shape[2]
    taps = [(c, i, j) for c in range(channels) for i in range(kernel) for j in range(kernel)]
    if not how.channel_first:
        taps.sort(key=lambda tap: (tap[1], tap[2], tap[0]))
    padded = np.pad(x, ((0, 0), (kernel // 2, kernel // 2), (kernel // 2, kernel // 2)))
    rows, columns = x.shape[1:]
    block = MLAS_BLOCK_TAPS if how.blocked else len(taps)
    out = np.zeros((w.shape[0], rows, columns), np.float32)
    part = np.zeros_like(out)
    for k, (c, i, j) in enumerate(taps):
        if k and k % block == 0:
            out, part = (out + part).astype(np.float32), np.zeros_like(out)
        value = np.broadcast_to(padded[c, i:i + rows, j:j + columns], out.shape)
        weight = np.broadcast_to(w[:, c, i, j][:, None, None], out.shape)
        part = _fma(value, weight, part) if how.fused else (part + (value * weight).astype(np.float32))
    return (out + part).astype(np.float32)


def _quantized(sums: np.ndarray, y_scale: np.float32) -> np.ndarray:
    """QuantizeLinear of ``sums`` (zero point 0): float32 division, ties to even, saturated."""
    return np.clip(np.rint(sums / y_scale), -128, 127).astype(np.int8)


@dataclass(frozen=True)
class Case:
    """A Conv's int8 weights [O, C, K, K] and float32 per-channel scales, an int8 input [C, H, W], an output scale."""

    weights: np.ndarray
    w_scales: np.ndarray
    x: np.ndarray
    y_scale: np.float32

    def sums(self, how: Summation) -> np.ndarray:
        x_float = (self.x.astype(np.float32) * X_SCALE).astype(np.float32)
        w_float = (self.weights.astype(np.float32) * self.w_scales[:, None, None, None]).astype(np.float32)
        return _sums(x_float, w_float, how)


def _case(seed: int, channels: int, kernel: int, side: int, others: list[Summation]) -> Case | None:
    """A draw (``seed``) with an output scale with which MLAS's sums quantize one output differently from each
    of the ``others``; None if the draw has none."""
    rng = np.random.default_rng(seed)
    draw = Case(rng.integers(-127, 128, (CHANNELS_OUT, channels, kernel, kernel)).astype(np.int8),
                rng.uniform(0.01, 0.02, CHANNELS_OUT).astype(np.float32),
                rng.integers(-128, 128, (channels, side, side)).astype(np.int8), np.float32(1.0))
    mlas, alternatives = draw.sums(MLAS), [draw.sums(how) for how in others]
    apart = np.logical_and.reduce([mlas != sums for sums in alternatives])
    for index in zip(*np.nonzero(apart)):
        for steps in range(1, 100):
            y_scale = np.float32(abs(float(mlas[index])) / (steps + 0.5))
            quantized = _quantized(mlas[index], y_scale)
            if all(_quantized(sums[index], y_scale) != quantized for sums in alternatives):
                return Case(draw.weights, draw.w_scales, draw.x, y_scale)
    return None


def _model(path, case: Case) -> None:
    """x (int8 [1, C, H, W]) -> DequantizeLinear -> Conv KxK (per-channel int8 weights, a zero int32 bias whose
    scale is 1, not x_scale * w_scale: onnxruntime keeps the Conv float) -> QuantizeLinear -> y (int8)."""
    channels, kernel, side = case.weights.shape[1], case.weights.shape[2], case.x.shape[1]
    constants = [numpy_helper.from_array(np.array(X_SCALE, np.float32), "x_scale"),
                 numpy_helper.from_array(np.array(0, np.int8), "x_zero_point"),
                 numpy_helper.from_array(case.weights, "w"),
                 numpy_helper.from_array(case.w_scales, "w_scale"),
                 numpy_helper.from_array(np.zeros(CHANNELS_OUT, np.int8), "w_zero_point"),
                 numpy_helper.from_array(np.zeros(CHANNELS_OUT, np.int32), "b"),
                 numpy_helper.from_array(np.ones(CHANNELS_OUT, np.float32), "b_scale"),
                 numpy_helper.from_array(np.zeros(CHANNELS_OUT, np.int32), "b_zero_point"),
                 numpy_helper.from_array(np.array(case.y_scale, np.float32), "y_scale"),
                 numpy_helper.from_array(np.array(0, np.int8), "y_zero_point")]
    nodes = [helper.make_node("DequantizeLinear", ["x", "x_scale", "x_zero_point"], ["x_float"], name="dq_x"),
             helper.make_node("DequantizeLinear", ["w", "w_scale", "w_zero_point"], ["w_float"], name="dq_w", axis=0),
             helper.make_node("DequantizeLinear", ["b", "b_scale", "b_zero_point"], ["b_float"], name="dq_b", axis=0),
             helper.make_node("Conv", ["x_float", "w_float", "b_float"], ["conv"], name="conv",
                              pads=[kernel // 2] * 4),
             helper.make_node("QuantizeLinear", ["conv", "y_scale", "y_zero_point"], ["y"], name="q_y")]
    graph = helper.make_graph(nodes, "qdq_float_conv",
                              [helper.make_tensor_value_info("x", TensorProto.INT8, [1, channels, side, side])],
                              [helper.make_tensor_value_info("y", TensorProto.INT8, [1, CHANNELS_OUT, side, side])],
                              constants)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


# Input channels, kernel size, input side, and the sums the built input tells from MLAS's: a 1x1 Conv (MNASNet's)
# rounded twice; a 3x3 one (72 taps, SqueezeNet's expand3x3 form) summed row first, rounded once or twice; a 3x3
# one of 144 taps over 15x15 pixels (SqueezeNet's first expand3x3), which MLAS sums as 128 + 16, in one chain; the
# same over 16x16 pixels, which the schedule sums in register tiles of four outputs (ResNet18's layer1 form); a 1x1
# one of 160 taps (SqueezeNet's squeeze form), whose blocks of whole channels are a loop over the blocks.
CASES = {
    "1x1_rounded_twice": (24, 1, 4, [Summation(channel_first=True, fused=False)]),
    "3x3_row_first": (8, 3, 4, [Summation(channel_first=False, fused=True),
                                Summation(channel_first=False, fused=False)]),
    "3x3_144_taps_in_one_chain": (16, 3, 15, [Summation(channel_first=True, fused=True, blocked=False)]),
    "3x3_144_taps_in_register_tiles": (16, 3, 16, [Summation(channel_first=True, fused=True, blocked=False)]),
    "1x1_160_taps_in_a_loop_over_blocks": (160, 1, 16, [Summation(channel_first=True, fused=True, blocked=False)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_float_conv_in_a_qdq_model_sums_as_onnxruntime(tmp_path, name):
    channels, kernel, side, others = CASES[name]
    case = next(case for case in (_case(seed, channels, kernel, side, others) for seed in range(100))
                if case is not None)
    path = tmp_path / f"{name}.onnx"
    _model(path, case)
    optimized = tmp_path / "onnxruntime.onnx"
    reference = session(path, optimized)
    assert [node.op_type for node in onnx.load(str(optimized)).graph.node if node.op_type.endswith("Conv")] == ["Conv"]
    want = reference.run(None, {"x": case.x[None]})[0][0]
    if not np.array_equal(want, _quantized(case.sums(MLAS), case.y_scale)):
        pytest.skip("this host's onnxruntime does not sum as MLAS's FMA kernels (an MLAS build without FMA)")
    assert all(not np.array_equal(want, _quantized(case.sums(how), case.y_scale)) for how in others)  # it tells

    bundle = compile(path, "lowpower", tmp_path / "bundle")
    assert mismatches(bundle, path, 1, inputs=lambda _rng: {"x": case.x[None]}) == []
    assert mismatches(bundle, path, 20) == []
