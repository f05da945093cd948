"""int8 reductions through the real pipeline (tvm_ext.compile, lowpower), bit-exact with TFLite Micro.

One model per operator holds several independent instances, each with its own input and output: 4-D
spatial means (axes 1 and 2 in either order, kept or not), each single axis (negative too), all axes (a
scalar result), size-1 and one-channel tensors, odd sizes, element counts that are and are not powers of
two, equal and different input/output quantizations. The comparison (self-test and random inputs against
TFLite Micro, exactly) is tests/tvm_ext/transform/int8/test_int8_elementwise_ops.py's.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

import numpy as np
import pytest

pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from c_checks import strict_sanitized_selftest  # noqa: E402
from test_int8_elementwise_ops import assert_bit_exact_with_tflite_micro  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor, build  # noqa: E402
from tvm_ext.compile import CompileError, compile  # noqa: E402


@dataclass(frozen=True)
class Reduction:
    """One instance of a reducer: input shape, TFLite's axis tensor, keep_dims."""

    shape: tuple[int, ...]
    axes: tuple[int, ...]
    keep_dims: bool

    def output_shape(self) -> tuple[int, ...]:
        reduced = {axis % len(self.shape) for axis in self.axes}
        return tuple(1 if axis in reduced else extent for axis, extent in enumerate(self.shape)
                     if self.keep_dims or axis not in reduced)


REDUCTIONS = (
    Reduction((1, 5, 7, 3), (1, 2), True),  # the 4-D spatial mean
    Reduction((2, 5, 7, 3), (2, 1), False),  # ... axes in the other order, dropped, two batches
    Reduction((1, 4, 4, 1), (1, 2), True),  # ... a power-of-two count, one channel
    Reduction((2, 3, 5), (0,), False),  # each axis
    Reduction((2, 3, 5), (1,), True),
    Reduction((2, 3, 5), (-1,), True),  # a negative axis
    Reduction((3, 7), (0, 1), False),  # every axis: a scalar
    Reduction((1, 1, 1, 1), (3,), True),  # one element
    Reduction((4, 1, 6), (1,), False),  # a size-1 axis
    Reduction((2, 3, 4, 5), (0, 2, 3), True),  # three axes
    Reduction((1, 17, 19, 1), (1, 2), False),  # a large odd count (323)
)
# (input, output) per-tensor quantizations, cycled through the cases: the same (as converters write MEAN),
# rescales above and below one, zero points at both ends of int8.
QUANTIZATIONS = (
    (Quantization((0.05,), (-20,)), Quantization((0.05,), (-20,))),
    (Quantization((0.05,), (3,)), Quantization((0.03,), (-128,))),
    (Quantization((0.01,), (-128,)), Quantization((0.2,), (127,))),
    (Quantization((0.2,), (10,)), Quantization((0.1,), (-3,))),
)


# Reductions of the DSP cores' window sums (tvm_ext.kernels.window_sums) beside REDUCTIONS' forms: runs of
# channels in blocks of four and a rest, the innermost axis four a word with and without a rest, and counts the sums
# leave to the generic kernel (at most nine, more than the 16-bit halves hold), and MEANs / SUMs of few taps over
# many channels whose outputs come from their halves where they lie (window_sums.LaneScale).
DSP_REDUCTIONS = REDUCTIONS + (
    Reduction((1, 6, 6, 20), (1, 2), False),  # 36 taps of 20 channels
    Reduction((1, 4, 4, 384), (1, 2), False),  # an EfficientNet's head: 16 taps of 384 channels
    Reduction((1, 64, 48), (2,), True),  # the innermost axis: twelve words a row
    Reduction((2, 10, 23), (-1,), False),  # ... five words and three bytes
    Reduction((1, 100, 64), (1,), False),  # a TCN's MEAN over time: 100 taps
    Reduction((1, 2, 2, 1280), (1, 2), False),  # four taps (generic: a centred sum of either sign does not pay)
    Reduction((1, 20, 20, 4), (1, 2), True),  # 400 taps (generic)
    Reduction((1, 2, 2, 1024), (1, 2), False),  # four taps, input zero point -128: lanes scaled where they lie
    Reduction((1, 3, 3, 1152), (1, 2), False),  # nine taps, input zero point 10: ... their sign bits taken off
)


def reduction_model(builtin: str, output_scale_factor: float = 1.0, dtype: str = "int8",
                    quantizations: tuple[tuple[Quantization, Quantization], ...] = QUANTIZATIONS,
                    reductions: tuple[Reduction, ...] = REDUCTIONS) -> Model:
    """One ``builtin`` reducer per case of REDUCTIONS, each with its own graph input and output of ``dtype`` (int8,
    or int16: 16x8), (input, output) quantizations cycled through ``quantizations``, output scales multiplied by
    ``output_scale_factor`` (a SUM's range grows with its element count)."""
    tensors, operators, inputs, outputs = [], [], [], []
    for index, case in enumerate(reductions):
        in_quant, out_quant = quantizations[index % len(quantizations)]
        out_quant = Quantization((out_quant.scales[0] * output_scale_factor,), out_quant.zero_points)
        inputs.append(len(tensors))
        tensors += [Tensor(f"case{index}_in", case.shape, dtype, in_quant),
                    Tensor(f"case{index}_axis", (len(case.axes),), "int32", data=np.array(case.axes, np.int32))]
        outputs.append(len(tensors))
        tensors.append(Tensor(f"case{index}_out", case.output_shape(), dtype, out_quant))
        operators.append(Operator(builtin, (inputs[-1], inputs[-1] + 1), (outputs[-1],),
                                  Options("ReducerOptions", {"KeepDims": case.keep_dims})))
    return Model(tensors, operators, tuple(inputs), tuple(outputs))


def test_mean_is_bit_exact_with_tflite_micro(tmp_path):
    assert_bit_exact_with_tflite_micro(reduction_model("MEAN"), tmp_path)


def test_sum_is_bit_exact_with_tflite_micro(tmp_path):
    assert_bit_exact_with_tflite_micro(reduction_model("SUM", output_scale_factor=8.0), tmp_path)


def assert_window_sums_bit_exact_on_cortex_m4f(model: Model, tmp_path) -> str:
    """Compile ``model`` for cortex-m4f: its kernels take the DSP window sums (tvm_ext.kernels.window_sums:
    SXTAB16 pairs), its self-test under QEMU matches TFLite Micro exactly on every output, and so does the same
    bundle built on the host (the helpers' portable C) under the strict warnings and the sanitizers. Returns the
    bundle's kernels' C."""
    path = tmp_path / "model.tflite"
    path.write_bytes(build(model))
    bundle = compile(path, "cortex-m4f", tmp_path / "m4f")
    report = bundle.selftest.output
    assert bundle.selftest.passed and bundle.selftest.where.startswith("mps2-"), report
    assert len(bundle.selftest.outputs) == len(model.outputs) and all(
        output.bit_identical for output in bundle.selftest.reports), report
    kernels = (bundle.out_dir / f"{bundle.plan.model}_kernels.c").read_text()
    assert f"{bundle.plan.model}_pool_pairs(" in kernels
    host = strict_sanitized_selftest(bundle.out_dir, tmp_path / "host",
                                     make_arguments=("selftest", "CFLAGS=-std=c99 -O2", "AR=ar"))
    assert host.returncode == 0 and "selftest: PASS" in host.stdout, host.stdout + host.stderr
    return kernels


@pytest.mark.parametrize(("builtin", "output_scale_factor"), [("MEAN", 1.0), ("SUM", 8.0)])
def test_mean_and_sum_of_a_dsp_core_are_bit_exact_with_tflite_micro(builtin, output_scale_factor, tmp_path):
    """cortex-m4f's window sums four elements a word, every form of DSP_REDUCTIONS (those the sums do not take keep
    the generic kernel), the scaled lanes among them in both forms."""
    kernels = assert_window_sums_bit_exact_on_cortex_m4f(reduction_model(builtin, output_scale_factor,
                                                                         reductions=DSP_REDUCTIONS), tmp_path)
    assert "_pool_scale_low(" in kernels and "_pool_scale_high(" in kernels and "& 32768)" in kernels, kernels


UNCHANGED_QUANTIZATIONS = tuple((in_quant, in_quant) for in_quant, _ in QUANTIZATIONS)  # TFLM's REDUCE_MAX/MIN


@pytest.mark.parametrize("builtin", ["REDUCE_MAX", "REDUCE_MIN"])
def test_reduce_max_and_min_are_bit_exact_with_tflite_micro(builtin, tmp_path):
    assert_bit_exact_with_tflite_micro(reduction_model(builtin, quantizations=UNCHANGED_QUANTIZATIONS), tmp_path)


def test_a_requantizing_reduce_max_is_refused_in_one_line_as_tflite_micro_refuses_it(tmp_path):
    path = tmp_path / "model.tflite"
    path.write_bytes(build(reduction_model("REDUCE_MAX")))  # QUANTIZATIONS' second pair differs
    with pytest.raises(CompileError) as refused:
        compile(path, "lowpower", tmp_path / "out")
    message = str(refused.value)
    assert "\n" not in message and "REDUCE_MAX with an output quantized unlike its input" in message, message



@dataclass(frozen=True)
class Resize:
    """One instance of a resize: NHWC input shape, output (height, width), TFLite's two options."""

    shape: tuple[int, int, int, int]
    size: tuple[int, int]
    align_corners: bool
    half_pixel_centers: bool


OPTION_PAIRS = ((False, False), (True, False), (False, True), (True, True))  # (align_corners, half_pixel_centers)
RESIZES = tuple(  # every option pair, up and down, one pixel, one output pixel, the same size
    Resize(shape, size, align, half)
    for align, half in OPTION_PAIRS
    for shape, size in (((1, 3, 5, 1), (7, 9)), ((2, 7, 9, 3), (3, 4)), ((1, 4, 5, 2), (4, 11)),
                        ((1, 1, 1, 1), (3, 2)), ((1, 5, 3, 1), (1, 1)), ((1, 4, 4, 2), (4, 4)))
)


def resize_model(builtin: str, options_table: str, resizes: tuple[Resize, ...] = RESIZES) -> Model:
    """One ``builtin`` per case of RESIZES, each with its own graph input and output (the same quantization
    in and out, as TFLite requires; cycled through QUANTIZATIONS' inputs)."""
    tensors, operators, inputs, outputs = [], [], [], []
    for index, case in enumerate(resizes):
        quant = QUANTIZATIONS[index % len(QUANTIZATIONS)][0]
        inputs.append(len(tensors))
        tensors += [Tensor(f"case{index}_in", case.shape, "int8", quant),
                    Tensor(f"case{index}_size", (2,), "int32", data=np.array(case.size, np.int32))]
        outputs.append(len(tensors))
        tensors.append(Tensor(f"case{index}_out", (case.shape[0], *case.size, case.shape[3]), "int8", quant))
        operators.append(Operator(builtin, (inputs[-1], inputs[-1] + 1), (outputs[-1],),
                                  Options(options_table, {"AlignCorners": case.align_corners,
                                                          "HalfPixelCenters": case.half_pixel_centers})))
    return Model(tensors, operators, tuple(inputs), tuple(outputs))


def test_resize_bilinear_is_bit_exact_with_tflite_micro(tmp_path):
    # TFLite Micro refuses align_corners with half_pixel_centers in RESIZE_BILINEAR
    runnable = tuple(case for case in RESIZES if not (case.align_corners and case.half_pixel_centers))
    assert_bit_exact_with_tflite_micro(resize_model("RESIZE_BILINEAR", "ResizeBilinearOptions", runnable), tmp_path)


def test_resize_nearest_neighbor_is_bit_exact_with_tflite_micro(tmp_path):
    assert_bit_exact_with_tflite_micro(resize_model("RESIZE_NEAREST_NEIGHBOR", "ResizeNearestNeighborOptions"),
                                       tmp_path)



_ALPHA_RNG = np.random.default_rng(15)
PRELU_CASES = (  # (input shape, alpha shape): alpha along each axis, per channel, a scalar, the full shape
    ((1, 5, 7, 3), (3,)), ((1, 5, 7, 3), (1, 1, 3)), ((2, 3, 5), (3, 1)), ((2, 3, 5), (2, 1, 1)),
    ((3, 7), ()), ((1, 1, 1, 1), (1,)), ((2, 3, 5), (2, 3, 5)),
)
# (input, alpha, output) quantizations, cycled through the cases: both rescales above and below one, alpha's
# zero point away from zero.
PRELU_QUANTIZATIONS = (
    (Quantization((0.05,), (-20,)), Quantization((0.01,), (0,)), Quantization((0.05,), (-20,))),
    (Quantization((0.05,), (3,)), Quantization((0.004,), (-7,)), Quantization((0.03,), (-128,))),
    (Quantization((0.01,), (-128,)), Quantization((0.02,), (100,)), Quantization((0.2,), (127,))),
)


def prelu_model() -> Model:
    """One PRELU per case of PRELU_CASES with a random constant alpha, each with its own graph input and output."""
    tensors, operators, inputs, outputs = [], [], [], []
    for index, (shape, alpha_shape) in enumerate(PRELU_CASES):
        in_quant, alpha_quant, out_quant = PRELU_QUANTIZATIONS[index % len(PRELU_QUANTIZATIONS)]
        alpha = _ALPHA_RNG.integers(-128, 128, alpha_shape).astype(np.int8)
        inputs.append(len(tensors))
        tensors += [Tensor(f"case{index}_in", shape, "int8", in_quant),
                    Tensor(f"case{index}_alpha", alpha_shape, "int8", alpha_quant, data=alpha)]
        outputs.append(len(tensors))
        tensors.append(Tensor(f"case{index}_out", shape, "int8", out_quant))
        operators.append(Operator("PRELU", (inputs[-1], inputs[-1] + 1), (outputs[-1],)))
    return Model(tensors, operators, tuple(inputs), tuple(outputs))


def test_prelu_is_bit_exact_with_tflite_micro(tmp_path):
    assert_bit_exact_with_tflite_micro(prelu_model(), tmp_path)


def prelu_pool_model(size: int, stride: int) -> Model:
    """PRELU (a per-channel alpha) on a 1x9x7x5 image, then a SAME-padded AVERAGE_POOL_2D of size x size windows
    stepping stride."""
    in_quant, alpha_quant, out_quant = PRELU_QUANTIZATIONS[1]
    out_hw = (-(-9 // stride), -(-7 // stride))
    alpha = _ALPHA_RNG.integers(-128, 128, (5,)).astype(np.int8)
    tensors = [Tensor("image", (1, 9, 7, 5), "int8", in_quant),
               Tensor("alpha", (5,), "int8", alpha_quant, data=alpha),
               Tensor("prelu", (1, 9, 7, 5), "int8", out_quant),
               Tensor("pool", (1, *out_hw, 5), "int8", out_quant)]
    options = Options("Pool2DOptions", {"Padding": 0, "StrideW": stride, "StrideH": stride, "FilterWidth": size,
                                        "FilterHeight": size})
    operators = [Operator("PRELU", (0, 1), (2,)), Operator("AVERAGE_POOL_2D", (2,), (3,), options=options)]
    return Model(tensors, operators, (0,), (3,))


@pytest.mark.parametrize("size, stride, fused", [(3, 2, False), (2, 2, True)], ids=["overlapping", "apart"])
def test_an_average_pool_of_overlapping_windows_keeps_its_producer_apart(tmp_path, size, stride, fused):
    """A padded average pool whose windows overlap is a kernel of its own (tvm_ext/transform/int8/pool.py): the
    PRELU before it is computed once per element, not once per window reading it; a pool of windows apart still
    takes it. Bit-exact with TFLite Micro either way (the padded windows' counts of valid taps)."""
    model = prelu_pool_model(size, stride)
    assert_bit_exact_with_tflite_micro(model, tmp_path)
    calls = json.loads((tmp_path / "out" / "manifest.json").read_text())["calls"]
    assert [len(call["layers"]) for call in calls] == ([2] if fused else [1, 1]), calls



# One element, odd sizes, a long last axis, and 256 rows of one element: among them (over the random runs)
# sums of squares of 0 and 1 (TFLite's special case) and the small sums whose inverse-sqrt shift is negative.
L2_SHAPES = ((1, 4), (2, 3, 5), (1, 1, 1, 1), (256, 1), (1, 2, 3, 64))
# Input quantizations are cycled through the shapes; TFLite's output is 1/128 with zero point 0.


def l2_normalization_model() -> Model:
    """One L2_NORMALIZATION per shape of L2_SHAPES, each with its own graph input and output."""
    tensors, operators = [], []
    for index, shape in enumerate(L2_SHAPES):
        in_quant = QUANTIZATIONS[index % len(QUANTIZATIONS)][0]
        tensors += [Tensor(f"case{index}_in", shape, "int8", in_quant),
                    Tensor(f"case{index}_out", shape, "int8", Quantization((1 / 128,), (0,)))]
        operators.append(Operator("L2_NORMALIZATION", (2 * index,), (2 * index + 1,)))
    return Model(tensors, operators, tuple(range(0, len(tensors), 2)), tuple(range(1, len(tensors), 2)))


def test_l2_normalization_is_bit_exact_with_tflite_micro(tmp_path):
    assert_bit_exact_with_tflite_micro(l2_normalization_model(), tmp_path)



@pytest.mark.parametrize("builtin, options_table, named", [
    ("RESIZE_BILINEAR", "ResizeBilinearOptions", "resize2d"),  # the pass names the Relax operator of it
    ("RESIZE_NEAREST_NEIGHBOR", "ResizeNearestNeighborOptions", "RESIZE_NEAREST_NEIGHBOR"),  # our converter
])
def test_a_requantizing_resize_is_refused_in_one_line(builtin, options_table, named, tmp_path):
    # TFLite Micro resizes the raw int8 values: with another output quantization the float model and
    # TFLite Micro disagree, and there is no exact integer form to lower to.
    resize = resize_model(builtin, options_table)
    out = resize.tensors[2]
    tensors = [*resize.tensors[:2], dataclasses.replace(out, quantization=Quantization((0.1,), (0,)))]
    path = tmp_path / "model.tflite"
    path.write_bytes(build(Model(tensors, resize.operators[:1], (0,), (2,))))
    with pytest.raises(CompileError) as refused:
        compile(path, "lowpower", tmp_path / "out")
    message = str(refused.value)
    assert "\n" not in message and named in message, message


def test_l2_normalization_with_another_output_quantization_is_refused_in_one_line(tmp_path):
    model = l2_normalization_model()
    tensors = [model.tensors[0], dataclasses.replace(model.tensors[1], quantization=Quantization((0.01,), (0,)))]
    path = tmp_path / "model.tflite"
    path.write_bytes(build(Model(tensors, model.operators[:1], (0,), (1,))))
    with pytest.raises(CompileError) as refused:
        compile(path, "lowpower", tmp_path / "out")
    message = str(refused.value)
    assert "\n" not in message and "L2_NORMALIZATION" in message and "1/128" in message, message
