"""int8 AVERAGE_POOL_2D, MAX_POOL_2D, ARG_MAX and ARG_MIN attributes in full (issue 15), bit-exact with TFLite Micro.

One model per operator (tests/tflite_builder.py) holds several independent instances, each with its own
graph input and output. Pools: SAME and VALID padding, stride 2 and 3 on odd sizes, unequal strides, a
non-square window, a window over the whole input, one channel, one pixel, batch 2, every fused activation.
ARG_MAX: each axis of 2-D to 4-D inputs, negative axes, a size-1 axis (ties to the first index, which random
int8 inputs over short axes often make); an int64 output is refused (TFLite Micro cannot run it). Each model
is made of operators TVM imports without quantize/dequantize: the frontend must mark it quantized (TVM's own
avg_pool2d rounds down). Compiled through tvm_ext.compile (lowpower): the self-test must report every output
bit-identical and the bundle's C must equal TFLite Micro exactly on random inputs
(tests/tvm_ext/transform/int8/test_int8_elementwise_ops.py's shared check).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from tflite.ActivationFunctionType import ActivationFunctionType as Act  # noqa: E402
from tflite.Padding import Padding  # noqa: E402
from tflite.TensorType import TensorType  # noqa: E402

from test_int8_elementwise_ops import assert_bit_exact_with_tflite_micro, assert_refused_in_one_line  # noqa: E402
from test_int8_misc_ops import assert_window_sums_bit_exact_on_cortex_m4f  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor  # noqa: E402


@dataclass(frozen=True)
class PoolCase:
    """One pool: input NHWC, window (height, width), strides, padding, fused activation, the quantization of
    its input and output (TFLite Micro pools int8 without rescaling: one quantization for both)."""

    input_shape: tuple[int, int, int, int]
    window: tuple[int, int]
    strides: tuple[int, int]
    padding: int = Padding.SAME
    activation: int = Act.NONE
    quantization: Quantization = Quantization((0.05,), (-3,))

    def output_shape(self) -> tuple[int, int, int, int]:
        batch, h, w, c = self.input_shape
        sizes = ((-(-size // stride) if self.padding == Padding.SAME else (size - window) // stride + 1)
                 for size, window, stride in zip((h, w), self.window, self.strides))
        return (batch, *sizes, c)


POOL_CASES = (
    PoolCase((1, 7, 6, 3), (3, 3), (2, 2)),  # odd sizes, stride 2, SAME
    PoolCase((1, 5, 5, 1), (2, 2), (2, 2), Padding.VALID, Act.RELU),  # one channel, a dropped last row
    PoolCase((2, 4, 7, 2), (3, 2), (1, 2), activation=Act.RELU6,
             quantization=Quantization((0.03,), (-128,))),  # batch 2, unequal strides, a non-square window
    PoolCase((1, 1, 1, 4), (1, 1), (1, 1), Padding.VALID, Act.RELU_N1_TO_1,
             Quantization((0.01,), (5,))),  # one pixel
    PoolCase((1, 6, 5, 3), (6, 5), (1, 1), Padding.VALID),  # a global pool
    PoolCase((1, 9, 8, 2), (3, 3), (3, 3), activation=Act.RELU_N1_TO_1,
             quantization=Quantization((0.01,), (0,))),  # stride 3, SAME (edge windows partly outside)
    PoolCase((1, 5, 7, 2), (4, 4), (1, 1), activation=Act.RELU),  # a window wider than the stride, SAME
)


# Pools of the DSP cores' window sums (tvm_ext.kernels.window_sums): column sums of unpadded windows stepping one
# column (an input row's elements in blocks of four and a rest); unpadded windows of more than nine taps otherwise,
# runs of channels in blocks of four and a rest, rows and column steps with a rest; and the forms that keep the
# generic kernel.
DSP_POOL_CASES = (
    PoolCase((1, 8, 12, 3), (4, 4), (1, 1), Padding.VALID),  # column sums of rows of 36 elements: nine blocks
    PoolCase((1, 6, 6, 5), (3, 3), (1, 1), Padding.VALID),  # nine taps, rows of 30: seven blocks and two bytes
    PoolCase((2, 7, 9, 3), (2, 3), (2, 1), Padding.VALID, Act.RELU6,
             Quantization((0.03,), (-128,))),  # two batches, rows two apart, rows of 27: six blocks and three bytes
    PoolCase((1, 4, 6, 2), (1, 2), (1, 1), Padding.VALID),  # a window of one row
    PoolCase((1, 3, 130, 2), (3, 3), (1, 1), Padding.VALID),  # rows of 260 elements: more than the column sums take
    PoolCase((1, 9, 11, 9), (3, 4), (2, 3), Padding.VALID, Act.RELU6,
             Quantization((0.03,), (-128,))),  # per pixel: two blocks of four and one channel
    PoolCase((1, 5, 5, 64), (5, 5), (1, 1), Padding.VALID),  # a global pool: one row of 25 taps, steps of 4 and 1
    PoolCase((2, 8, 8, 12), (8, 8), (1, 1), Padding.VALID, Act.RELU),  # 64 taps, two batches
    PoolCase((1, 17, 16, 4), (17, 16), (1, 1), Padding.VALID),  # 272 taps: more than the halves hold (generic)
    PoolCase((1, 3, 3, 256), (3, 3), (1, 1), Padding.VALID),  # nine taps (generic)
    PoolCase((1, 7, 6, 8), (4, 4), (2, 2)),  # padded (generic)
    PoolCase((1, 8, 8, 10), (2, 2), (2, 2), Padding.VALID),  # 2^2 taps: per pixel two blocks' averages stored packed
    PoolCase((1, 8, 9, 6), (2, 4), (2, 4), Padding.VALID),  # 2^3 taps, a column left over: one block packed, two bytes
    PoolCase((1, 4, 4, 3), (2, 2), (2, 2), Padding.VALID),  # 2^2 taps of runs under a block (generic)
    PoolCase((1, 6, 6, 8), (2, 2), (2, 2), Padding.VALID, Act.RELU6,
             Quantization((0.03,), (-128,))),  # 2^2 taps clamped to a narrower range (generic)
)


def pool_model(builtin: str, cases: tuple[PoolCase, ...] = POOL_CASES) -> Model:
    """One ``builtin`` (AVERAGE_POOL_2D or MAX_POOL_2D) per case, each with its own graph input and output."""
    tensors, operators = [], []
    for index, case in enumerate(cases):
        tensors += [Tensor(f"case{index}_in", case.input_shape, "int8", case.quantization),
                    Tensor(f"case{index}_out", case.output_shape(), "int8", case.quantization)]
        options = Options("Pool2DOptions", {"Padding": case.padding, "StrideH": case.strides[0],
                                            "StrideW": case.strides[1], "FilterHeight": case.window[0],
                                            "FilterWidth": case.window[1], "FusedActivationFunction": case.activation})
        operators.append(Operator(builtin, (2 * index,), (2 * index + 1,), options))
    return Model(tensors, operators, tuple(range(0, len(tensors), 2)), tuple(range(1, len(tensors), 2)))


# (input shape, axis): each axis, negative ones, a size-1 axis (int32 outputs: TFLite Micro cannot run int64).
ARG_MAXES = (
    ((3, 7), 1),
    ((3, 7), 0),
    ((2, 3, 5), 0),
    ((2, 3, 5), 1),
    ((2, 3, 5), -1),
    ((1, 4, 3, 6), 3),
    ((1, 4, 3, 6), -3),
    ((2, 1, 3), 1),
)


def arg_max_model(cases: tuple[tuple[tuple[int, ...], int], ...] = ARG_MAXES, output_type: str = "int32",
                  builtin: str = "ARG_MAX") -> Model:
    """One ``builtin`` (ARG_MAX or ARG_MIN) per case, each with its own graph input and ``output_type`` output."""
    tensors, operators, inputs, outputs = [], [], [], []
    for index, (shape, axis) in enumerate(cases):
        inputs.append(len(tensors))
        tensors += [Tensor(f"case{index}_in", shape, "int8", Quantization((0.05,), (index - 3,))),
                    Tensor(f"case{index}_axis", (1,), "int32", data=np.array([axis], np.int32))]
        outputs.append(len(tensors))
        tensors.append(Tensor(f"case{index}_out", tuple(size for dim, size in enumerate(shape)
                                                          if dim != axis % len(shape)), output_type))
        table = "ArgMaxOptions" if builtin == "ARG_MAX" else "ArgMinOptions"
        options = Options(table, {"OutputType": getattr(TensorType, output_type.upper())})
        operators.append(Operator(builtin, (inputs[-1], inputs[-1] + 1), (outputs[-1],), options))
    return Model(tensors, operators, tuple(inputs), tuple(outputs))


@pytest.mark.parametrize("builtin", ["AVERAGE_POOL_2D", "MAX_POOL_2D"])
def test_pool_attributes_are_bit_exact_with_tflite_micro(builtin, tmp_path):
    assert_bit_exact_with_tflite_micro(pool_model(builtin), tmp_path)


def test_average_pools_of_a_dsp_core_are_bit_exact_with_tflite_micro(tmp_path):
    """cortex-m4f's window sums four channels a word, every form of DSP_POOL_CASES (those the sums do not take keep
    the generic kernel)."""
    kernels = assert_window_sums_bit_exact_on_cortex_m4f(pool_model("AVERAGE_POOL_2D", DSP_POOL_CASES), tmp_path)
    assert kernels.count("_pool_store_halves(") == 4, kernels  # the four column-sum cases
    assert kernels.count("_pool_store_average(") == 2, kernels  # the two windows of 2^k taps over the full range


@pytest.mark.parametrize("builtin", ["ARG_MAX", "ARG_MIN"])
def test_arg_max_and_arg_min_attributes_are_bit_exact_with_tflite_micro(builtin, tmp_path):
    assert_bit_exact_with_tflite_micro(arg_max_model(builtin=builtin), tmp_path)



def test_an_arg_max_with_an_int64_output_is_refused_in_one_line(tmp_path):
    assert_refused_in_one_line(arg_max_model(ARG_MAXES[:1], "int64"), "ARG_MAX with an int64 output", tmp_path)
