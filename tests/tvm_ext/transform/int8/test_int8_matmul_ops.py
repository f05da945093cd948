"""int8 TRANSPOSE_CONV and BATCH_MATMUL through the real pipeline (tvm_ext.compile, lowpower), bit-exact with
TFLite Micro (UNIDIRECTIONAL_SEQUENCE_LSTM, once refused here, is tests/tvm_ext/transform/int8/test_int8_lstm.py's).

One model per operator holds several independent instances (tests/tflite_builder.py), each with its own
inputs and output. TRANSPOSE_CONV: SAME and VALID padding, strides 1, 2 and 3 (also unequal), an odd padding
split, kernels smaller than the stride, batch 2, one channel, per-channel and per-tensor weights, with and
without bias, each fused activation. BATCH_MATMUL: adj_x/adj_y, broadcast batch dimensions, ranks 2 to 4, a
constant operand. The bundle's self-test and its C on random inputs must equal TFLite Micro exactly
(tests/tvm_ext/transform/int8/test_int8_elementwise_ops.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

tflite = pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from tflite.ActivationFunctionType import ActivationFunctionType as Act  # noqa: E402
from tflite.Padding import Padding  # noqa: E402

from emulator.tools import missing_tools  # noqa: E402
from test_int8_elementwise_ops import assert_bit_exact_with_tflite_micro  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor, build  # noqa: E402
from tvm import te  # noqa: E402

from packager.fixed_point_c import REQUANTIZE_OPS, RIGHT_SHIFT_ONLY, SMALL_RIGHT_SHIFT  # noqa: E402
from tvm_ext.compile import CompileError, compile  # noqa: E402
from tvm_ext.kernels import Rounding  # noqa: E402
from tvm_ext.kernels.batch_matmul import batch_matmul_int8  # noqa: E402
from tvm_ext.kernels.quant_params import ActivationRange  # noqa: E402


@dataclass(frozen=True)
class TransposeConvCase:
    """One TRANSPOSE_CONV: input NHWC, kernel (out channels, KH, KW), strides, padding, output NHWC."""

    input_shape: tuple[int, int, int, int]
    kernel: tuple[int, int, int]
    strides: tuple[int, int]
    padding: int  # tflite.Padding
    output_shape: tuple[int, int, int, int]
    bias: bool
    per_channel: bool = True
    activation: int = Act.NONE  # the fused activation (TVM's converter drops it; TFLite Micro clamps)


TRANSPOSE_CONV_CASES = (
    TransposeConvCase((1, 3, 4, 3), (4, 3, 3), (2, 2), Padding.SAME, (1, 6, 8, 4), bias=True, activation=Act.RELU),
    TransposeConvCase((1, 4, 3, 2), (3, 2, 3), (1, 1), Padding.VALID, (1, 5, 5, 3), bias=False),
    TransposeConvCase((1, 3, 3, 1), (2, 3, 3), (2, 2), Padding.VALID, (1, 7, 7, 2), bias=True),
    TransposeConvCase((1, 5, 4, 2), (3, 3, 2), (1, 1), Padding.SAME, (1, 5, 4, 3), bias=True,  # odd split
                      activation=Act.RELU6),
    TransposeConvCase((2, 2, 3, 2), (2, 4, 4), (2, 2), Padding.SAME, (2, 4, 6, 2), bias=False),  # batch 2
    TransposeConvCase((1, 3, 2, 3), (1, 2, 3), (2, 1), Padding.VALID, (1, 6, 4, 1), bias=True, per_channel=False,
                      activation=Act.RELU_N1_TO_1),
    # kernels smaller than the stride: the last output rows/columns are reached by no input (bias alone)
    TransposeConvCase((1, 2, 3, 2), (2, 1, 1), (2, 2), Padding.VALID, (1, 4, 6, 2), bias=True),
    TransposeConvCase((1, 3, 2, 1), (3, 1, 2), (3, 3), Padding.SAME, (1, 9, 6, 3), bias=True),
)


def transpose_conv_model(cases: tuple[TransposeConvCase, ...], dtype: str = "int8") -> Model:
    """One TRANSPOSE_CONV per case: inputs (output_shape, weights, input[, bias]) as TFLite orders them; ``dtype``
    int8 (int32 bias, zero points across int8) or int16 (16x8: zero points 0, an int64 bias beyond int32)."""
    rng = np.random.default_rng(7)
    sixteen_by_eight = dtype == "int16"
    tensors, operators, inputs, outputs = [], [], [], []
    for index, case in enumerate(cases):
        cout, kh, kw = case.kernel
        cin = case.input_shape[3]
        in_scale, out_scale = 0.02 + 0.01 * index, 0.05 + 0.02 * index
        if sixteen_by_eight:
            in_scale, out_scale = in_scale / 256, out_scale / 256
        in_zero_point, out_zero_point = (0, 0) if sixteen_by_eight else (index * 9 - 20, 5 - index * 7)
        scales = tuple(float(s) for s in (rng.uniform(0.002, 0.02, cout) if case.per_channel else [0.01] * cout))
        if not case.per_channel:
            scales = scales[:1]
        first = len(tensors)
        tensors += [
            Tensor(f"case{index}_output_shape", (4,), "int32", data=np.array(case.output_shape, np.int32)),
            Tensor(f"case{index}_weights", (cout, kh, kw, cin), "int8", Quantization(scales, (0,) * len(scales)),
                   data=rng.integers(-127, 128, (cout, kh, kw, cin)).astype(np.int8)),
            Tensor(f"case{index}_in", case.input_shape, dtype, Quantization((in_scale,), (in_zero_point,))),
        ]
        operands = [first, first + 1, first + 2]
        inputs.append(first + 2)
        if case.bias:
            bias_scales = tuple(in_scale * s for s in scales)
            magnitude = (1 << 33 if index == 0 else 300_000) if sixteen_by_eight else 3000
            operands.append(len(tensors))
            tensors.append(Tensor(f"case{index}_bias", (cout,), "int64" if sixteen_by_eight else "int32",
                                  Quantization(bias_scales, (0,) * len(bias_scales)),
                                  data=rng.integers(-magnitude, magnitude, cout)))
        outputs.append(len(tensors))
        tensors.append(Tensor(f"case{index}_out", case.output_shape, dtype,
                              Quantization((out_scale,), (out_zero_point,))))
        options = Options("TransposeConvOptions", {"Padding": case.padding, "StrideH": case.strides[0],
                                                   "StrideW": case.strides[1],
                                                   "FusedActivationFunction": case.activation})
        operators.append(Operator("TRANSPOSE_CONV", tuple(operands), (outputs[-1],), options, version=3))
    return Model(tensors, operators, tuple(inputs), tuple(outputs))


def test_transpose_conv_is_bit_exact_with_tflite_micro(tmp_path):
    assert_bit_exact_with_tflite_micro(transpose_conv_model(TRANSPOSE_CONV_CASES), tmp_path)



@dataclass(frozen=True)
class BatchMatMulCase:
    """One BATCH_MATMUL: operand shapes as stored, adj_x/adj_y, and whether rhs is a constant."""

    lhs: tuple[int, ...]
    rhs: tuple[int, ...]
    adj_x: bool = False
    adj_y: bool = False
    constant_rhs: bool = False


BATCH_MATMUL_CASES = (
    BatchMatMulCase((2, 3, 4), (2, 4, 5)),
    BatchMatMulCase((2, 4, 3), (2, 4, 5), adj_x=True),
    BatchMatMulCase((1, 3, 4), (3, 5, 4), adj_y=True),  # lhs batch broadcast
    BatchMatMulCase((2, 1, 4, 3), (1, 3, 5, 4), adj_x=True, adj_y=True),  # both broadcast, rank 4
    BatchMatMulCase((2, 3, 4), (4, 2), constant_rhs=True),  # lower-rank constant operand
    BatchMatMulCase((3, 7), (7, 1)),  # rank 2, one output column
)


def _batch_matmul_output_shape(case: BatchMatMulCase) -> tuple[int, ...]:
    rows = case.lhs[-1] if case.adj_x else case.lhs[-2]
    cols = case.rhs[-2] if case.adj_y else case.rhs[-1]
    return tuple(np.broadcast_shapes(case.lhs[:-2], case.rhs[:-2])) + (rows, cols)


def batch_matmul_model(cases: tuple[BatchMatMulCase, ...], dtype: str = "int8") -> Model:
    """One BATCH_MATMUL per case, each with its own graph inputs and output; zero points at both ends (int8), or
    int16 operands and output with zero points 0 (16x8, as TFLite quantizes them)."""
    rng = np.random.default_rng(11)
    info = np.iinfo(dtype)
    tensors, operators, inputs, outputs = [], [], [], []
    for index, case in enumerate(cases):
        int8 = dtype == "int8"
        lhs_quant = Quantization((0.03 + 0.01 * index,), (index * 11 - 30 if int8 else 0,))
        rhs_quant = Quantization((0.02,), ((-128 if index % 2 else 7) if int8 else 0,))
        rhs_data = rng.integers(info.min, info.max + 1, case.rhs).astype(dtype) if case.constant_rhs else None
        first = len(tensors)
        tensors += [Tensor(f"case{index}_lhs", case.lhs, dtype, lhs_quant),
                    Tensor(f"case{index}_rhs", case.rhs, dtype, rhs_quant, data=rhs_data)]
        inputs += [first] + ([] if case.constant_rhs else [first + 1])
        outputs.append(len(tensors))
        tensors.append(Tensor(f"case{index}_out", _batch_matmul_output_shape(case), dtype,
                              Quantization((0.3 + 0.2 * index,) if int8 else (0.004 + 0.003 * index,),
                                           (3 - index if int8 else 0,))))
        options = Options("BatchMatMulOptions", {"AdjX": case.adj_x, "AdjY": case.adj_y})
        operators.append(Operator("BATCH_MATMUL", (first, first + 1), (outputs[-1],), options))
    return Model(tensors, operators, tuple(inputs), tuple(outputs))


needs_cross_tools = pytest.mark.skipif(bool(missing_tools()), reason="needs arm-none-eabi-gcc and qemu-system-arm")


def test_batch_matmul_is_bit_exact_with_tflite_micro(tmp_path):
    assert_bit_exact_with_tflite_micro(batch_matmul_model(BATCH_MATMUL_CASES), tmp_path)


def test_16x8_batch_matmul_is_bit_exact_with_tflite_micro(tmp_path):
    """int16 operands (TFLite Micro's int64 sums and int64 requantization): refused as unsupported before, which
    a 16x8 ViT's attention (the seed-110 unseen set's vit_16x16_d24_16x8) met."""
    assert_bit_exact_with_tflite_micro(batch_matmul_model(BATCH_MATMUL_CASES, "int16"), tmp_path)


@pytest.mark.parametrize("depth, rhs_zero_point, helper", [(20, 7, SMALL_RIGHT_SHIFT), (16_512, -128, SMALL_RIGHT_SHIFT),
                                                             (16_513, -128, RIGHT_SHIFT_ONLY)])
def test_the_generic_kernel_requantizes_provably_small_sums_with_the_small_helper(depth, rhs_zero_point, helper):
    """The generic kernel's requantization (the one every core without a batch matmul helper runs: RISC-V's,
    generic C's) is TFLite's double rounding by its "double_small" helper where depth x both operands' largest
    centered values stays below 2^30 (16,512 x 255 x 255 does, 16,513 x 255 x 255 does not), the same results
    (tests above: bit-exact with TFLite Micro)."""
    lhs, rhs = te.placeholder((2, 3, depth), "int8"), te.placeholder((2, depth, 5), "int8")
    out = batch_matmul_int8(lhs, rhs, lhs_zero_point=127, rhs_zero_point=rhs_zero_point, adj_x=False, adj_y=False,
                            multiplier=2**30 + 5, shift=-9, output_zero_point=3, activation=ActivationRange(),
                            rounding=Rounding.DOUBLE)
    body = str(out.op.body)  # TVMScript prints the op tvm_ext.x as T.tvm_ext_x
    assert REQUANTIZE_OPS[helper].replace(".", "_") + "(" in body, body
    assert body.count("multiply_by_quantized_multiplier") == 1, body


# Products whose widened columns take an arena scratch (over 64 B): a 2-head attention's scores of 9 tokens by a
# head depth of 20 (keys transposed, or read with adj_y), its attention by values of 7 columns (odd rows, columns
# and a depth not a multiple of four)
DSP_ATTENTION_CASES = (
    BatchMatMulCase((1, 2, 9, 20), (1, 2, 20, 9)),
    BatchMatMulCase((1, 2, 9, 20), (1, 2, 9, 20), adj_y=True),
    BatchMatMulCase((1, 2, 9, 9), (1, 2, 9, 7)),
    BatchMatMulCase((2, 21, 5), (1, 21, 6), adj_x=True),  # rhs batch broadcast, lhs read down its columns
)


@needs_cross_tools
def test_batch_matmul_on_the_dsp_helper_is_bit_exact_with_tflite_micro(tmp_path):
    """On cortex-m4f every case runs the DSP cores' batch matmul helper (both operands widened once, 2x2 tiles of
    dual MACs: backends.cortex_m.schedules.batch_matmul), its self-test under QEMU bit-exact with TFLite Micro."""
    path = tmp_path / "model.tflite"
    path.write_bytes(build(batch_matmul_model(BATCH_MATMUL_CASES + DSP_ATTENTION_CASES)))
    bundle = compile(path, "cortex-m4f", tmp_path / "out")
    report = bundle.selftest.output
    assert bundle.selftest.passed and all(output.bit_identical for output in bundle.selftest.reports), report
    kernels = next(bundle.out_dir.glob("*_kernels.c")).read_text()
    assert kernels.count("_batch_matmul_s8(") == len(BATCH_MATMUL_CASES + DSP_ATTENTION_CASES)


def test_a_transpose_conv_output_beyond_its_stride_is_refused_in_one_line(tmp_path):
    """An output_shape more than stride-1 rows past the last input's reach cannot be Relax's output padding."""
    case = TransposeConvCase((1, 2, 2, 1), (1, 1, 1), (2, 2), Padding.VALID, (1, 6, 4, 1), bias=False)
    path = tmp_path / "far.tflite"
    path.write_bytes(build(transpose_conv_model((case,))))
    with pytest.raises(CompileError) as refused:
        compile(path, "lowpower", tmp_path / "out")
    message = str(refused.value)
    assert "\n" not in message and "TRANSPOSE_CONV output_shape [6, 4]" in message, message
