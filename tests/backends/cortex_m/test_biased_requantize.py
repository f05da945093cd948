"""The DSP cores' biased requantization of element loops (backends/cortex_m/schedules/biased_requantize.py, the
helper backends/cortex_m/helpers/templates/requantize_biased.h.in): on cortex-m4f the scalar requantizations of an
int8 elementwise chain (ADD, LOGISTIC, MUL, SUB of fewer than binary.VALUES_ELEMENTS elements: the generic kernels)
and of an integer QUANTIZE (int8 and int16 inputs) are calls of `<prefix>_requantize_biased(_s8)` with the zero point
in the bias, bit for bit with TFLite Micro under QEMU mps2-an386 and on the host (the helper's portable C); a kernel
with scratch buffers (a MAC kernel's accumulators) keeps its own, and a bias beyond the helper's bound keeps the
scalar helper; a TE extern stage (the DSP cores' MEAN window sums) takes the biased helper despite its local
buffers."""

from __future__ import annotations

import numpy as np
import pytest
import tvm
from tvm import te, tirx

from backends.cortex_m.schedules.biased_requantize import (BIAS_LIMIT, REQUANTIZE_BIASED_OP, REQUANTIZE_BIASED_S8_OP,
                                                           biased_requantize_calls)
from packager.fixed_point_c import REQUANTIZE_OPS, SATURATE_INT8_OP, SMALL_RIGHT_SHIFT
from tvm_ext.tir.tir_walk import walk

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from test_requantize_epilogue import bit_exact_bundle, host_selftest_passes, needs_cross_tools  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor, build  # noqa: E402

SHAPE = (1, 4, 4, 4)
"""64 elements: fewer than binary.VALUES_ELEMENTS, so ADD and SUB keep the generic kernel."""


def _model() -> bytes:
    """Inputs a (scale 0.05, zero point -100), b (0.11, 27) and w (int16, 0.0004, 0), and as model outputs:
    sigmoid(a + b) * a, b - a, a requantized (0.07, 9) and w quantized to int8 (0.02, -5)."""
    logistic = Quantization((1 / 256,), (-128,))
    tensors = [Tensor("a", SHAPE, "int8", Quantization((0.05,), (-100,))),
               Tensor("b", SHAPE, "int8", Quantization((0.11,), (27,))),
               Tensor("w", SHAPE, "int16", Quantization((0.0004,), (0,))),
               Tensor("sum", SHAPE, "int8", Quantization((0.13,), (-3,))),
               Tensor("gate", SHAPE, "int8", logistic),
               Tensor("gated", SHAPE, "int8", Quantization((0.03,), (4,))),
               Tensor("difference", SHAPE, "int8", Quantization((0.09,), (11,))),
               Tensor("requantized", SHAPE, "int8", Quantization((0.07,), (9,))),
               Tensor("quantized", SHAPE, "int8", Quantization((0.02,), (-5,)))]
    plain = {"FusedActivationFunction": 0}
    operators = [Operator("ADD", (0, 1), (3,), Options("AddOptions", plain)),
                 Operator("LOGISTIC", (3,), (4,)),
                 Operator("MUL", (4, 0), (5,), Options("MulOptions", plain)),
                 Operator("SUB", (1, 0), (6,), Options("SubOptions", plain)),
                 Operator("QUANTIZE", (0,), (7,)),
                 Operator("QUANTIZE", (2,), (8,))]
    return build(Model(tensors, operators, (0, 1, 2), (5, 6, 7, 8)))


@needs_cross_tools
def test_element_loops_requantize_with_the_biased_helper_bit_exactly(tmp_path):
    bundle, kernels = bit_exact_bundle(tmp_path, "chain", _model(), "cortex-m4f", "mps2-an386")
    assert "_requantize_biased_s8(" in kernels and "requantize_double_small(" not in kernels, kernels
    host_selftest_passes(bundle.out_dir)  # the same C on the host: the helper's portable steps


def _mean_model() -> bytes:
    """MEANs over the pixels of 12 int8 channels (scale 0.05, zero point -100; outputs 0.03, 21): of 6x6, more taps
    than the generic kernel's unrolled ones, and of 18x18, more than a pair of 16-bit sums holds (PAIR_TAPS), so the
    DSP cores' window sums (tvm_ext/kernels/window_sums.py, mean_words; the latter two chunks of 162 pixels), extern
    stages whose outputs rescale one by one."""
    tensors = [Tensor("x", (1, 6, 6, 12), "int8", Quantization((0.05,), (-100,))),
               Tensor("y", (1, 18, 18, 12), "int8", Quantization((0.05,), (-100,))),
               Tensor("axes", (2,), "int32", None, np.array((1, 2), np.int32)),
               Tensor("mean_x", (1, 1, 1, 12), "int8", Quantization((0.03,), (21,))),
               Tensor("mean_y", (1, 1, 1, 12), "int8", Quantization((0.03,), (21,)))]
    keep = Options("ReducerOptions", {"KeepDims": True})
    operators = [Operator("MEAN", (0, 2), (3,), keep, version=2), Operator("MEAN", (1, 2), (4,), keep, version=2)]
    return build(Model(tensors, operators, (0, 1), (3, 4)))


@needs_cross_tools
def test_window_sums_extern_stages_requantize_with_the_biased_helper_bit_exactly(tmp_path):
    bundle, kernels = bit_exact_bundle(tmp_path, "mean", _mean_model(), "cortex-m4f", "mps2-an386")
    assert kernels.count("_pool_pairs(") >= 2 and "int32_t sums_ptr[4]" in kernels, kernels  # both, one chunked
    assert "_requantize_biased_s8(" in kernels and "requantize_double_small(" not in kernels, kernels  # biased
    host_selftest_passes(bundle.out_dir)


def _requantization(acc, zero_point: int, shift: int = -7):
    """saturate_int8(requantize_double_small(acc, 1518500250, shift) + zero_point)."""
    scaled = tirx.call_intrin("int32", REQUANTIZE_OPS[SMALL_RIGHT_SHIFT], acc, tirx.const(1518500250, "int32"),
                              tirx.const(shift, "int32"))
    return tirx.call_intrin("int32", SATURATE_INT8_OP, scaled + zero_point)


def _ops(func) -> list[str]:
    return [node.op.name for node in walk(func.body) if isinstance(node, tvm.ir.Call) and hasattr(node.op, "name")]


def _element_loop(zero_point: int, shift: int = -7):
    x = te.placeholder((16,), "int8", "x")
    y = te.compute((16,), lambda i: _requantization(x[i].astype("int32") * 256, zero_point, shift).astype("int8"))
    return te.create_prim_func([x, y])


def test_the_zero_point_goes_into_the_bias_and_the_saturation_into_the_call():
    ops = _ops(biased_requantize_calls(_element_loop(-22)))
    assert ops.count(REQUANTIZE_BIASED_S8_OP) == 1 and SATURATE_INT8_OP not in ops, ops
    assert REQUANTIZE_OPS[SMALL_RIGHT_SHIFT] not in ops, ops


def test_a_bias_beyond_the_bound_keeps_the_zero_point_after_the_call():
    zero_point = 3  # with a right shift of 29: 2^28 + 3 * 2^29 > BIAS_LIMIT
    assert (1 << 28) + (zero_point << 29) > BIAS_LIMIT
    ops = _ops(biased_requantize_calls(_element_loop(zero_point, shift=-29)))
    assert REQUANTIZE_BIASED_OP in ops and SATURATE_INT8_OP in ops and REQUANTIZE_BIASED_S8_OP not in ops, ops


def test_a_kernel_with_scratch_keeps_its_requantizations():
    x = te.placeholder((4, 8), "int8", "x")
    k = te.reduce_axis((0, 8), "k")
    total = te.compute((4,), lambda i: te.sum(x[i, k].astype("int32"), axis=k), name="total")
    y = te.compute((4,), lambda i: _requantization(total[i], 5).astype("int8"))
    func = te.create_prim_func([x, y])  # `total` is a buffer the function allocates
    assert biased_requantize_calls(func).same_as(func)
