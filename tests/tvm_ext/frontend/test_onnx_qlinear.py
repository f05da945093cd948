"""ONNX QLinearConv and QLinearMatMul (no converter in TVM 0.27: refused before) take the integer path and
equal onnxruntime bit for bit (the self-test compares integer outputs exactly), ties and accumulators
beyond float32's 2^24 included."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from memory_planner.plan import TensorRole
from onnx import TensorProto, helper, numpy_helper

from emulator.tools import RISCV_TOOLS, missing_tools
from tvm_ext.compile import compile
from tvm_ext.kernels.onnx_qlinear import round_half_to_even, saturate_half_to_even
from tvm_ext.tir import tir_walk

ONNX_TYPE = {np.int8: TensorProto.INT8, np.uint8: TensorProto.UINT8}


def _save(tmp_path, node, inputs, output_type, constants, opset):
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", output_type, None)],
                              constants)
    model = onnx.shape_inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]))
    path = tmp_path / "qlinear.onnx"
    onnx.save(model, str(path))
    return path


def _quant(name: str, scale, zero_point, dtype) -> list[onnx.TensorProto]:
    return [numpy_helper.from_array(np.asarray(scale, np.float32), f"{name}_scale"),
            numpy_helper.from_array(np.asarray(zero_point, dtype), f"{name}_zero_point")]


def _assert_integer_bundle_matches_onnxruntime(bundle, kernel: str):
    assert bundle.selftest.passed and "onnxruntime" in bundle.selftest.output, bundle.selftest.output
    assert any(kernel in call.kernel for call in bundle.plan.calls), [c.kernel for c in bundle.plan.calls]
    # Only the scales (constants) are float: every activation is an integer tensor.
    activations = [t for t in bundle.plan.tensors.values() if t.role is not TensorRole.CONSTANT]
    assert all(np.dtype(t.dtype).kind in "iu" for t in activations), activations


CONV_CASES = {
    # x type, w type, (x, w, y) scales (w's per tensor or per output channel), largest |weight|, bias, attributes
    "uint8_per_tensor_pads_strides": (np.uint8, np.uint8, (0.02, 0.03, 0.7), None, True,
                                      {"pads": [1, 2, 0, 1], "strides": [2, 1]}),
    "int8_per_channel_group_dilation": (np.int8, np.int8, (0.02, [0.02, 0.05, 0.011, 0.3], 0.7), None, True,
                                        {"group": 2, "dilations": [2, 1], "pads": [1, 1, 1, 1]}),
    # Full-range weights: onnxruntime's x86-64 kernels on a core without VNNI add uint8 x int8 products in pairs in
    # int16, saturating, unless the reference asks for exact ones (runtimes.ONNXRUNTIME_EXACT_UINT8).
    "uint8_int8_no_bias_same_upper": (np.uint8, np.int8, (0.02, [0.01, 0.02, 0.04, 0.08], 0.7), None, False,
                                      {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    # x_scale * w_scale / y_scale = 1/8 exactly and small weights: about one output in eight is a tie, where
    # rounding half away from zero differs from half to even.
    "ties_round_half_to_even": (np.int8, np.int8, (0.5, 0.25, 1.0), 1, False, {}),
}


@pytest.mark.parametrize("case", sorted(CONV_CASES))
def test_qlinear_conv_matches_onnxruntime(tmp_path, case):
    x_type, w_type, (x_scale, w_scale, y_scale), weight_high, bias, attrs = CONV_CASES[case]
    rng = np.random.default_rng(7)
    group = attrs.get("group", 1)
    info = np.iinfo(w_type)
    low, high = (info.min, info.max) if weight_high is None else (-weight_high, weight_high)
    weights = rng.integers(low, high + 1, (4, 4 // group, 3, 3)).astype(w_type)
    w_zero_point = np.zeros(np.shape(w_scale), w_type) if w_type == np.int8 else np.full(np.shape(w_scale), 131, w_type)
    x_zero_point = 128 if x_type == np.uint8 else -3
    constants = [numpy_helper.from_array(weights, "w"), *_quant("x", x_scale, x_zero_point, x_type),
                 *_quant("w", w_scale, w_zero_point, w_type), *_quant("y", y_scale, 5, x_type)]
    inputs = ["x", "x_scale", "x_zero_point", "w", "w_scale", "w_zero_point", "y_scale", "y_zero_point"]
    if bias:
        constants.append(numpy_helper.from_array(rng.integers(-20000, 20000, 4).astype(np.int32), "b"))
        inputs.append("b")
    node = helper.make_node("QLinearConv", inputs, ["y"], name="conv", **attrs)
    path = _save(tmp_path, node, [helper.make_tensor_value_info("x", ONNX_TYPE[x_type], [1, 4, 9, 8])],
                 ONNX_TYPE[x_type], constants, 10)
    bundle = compile(path, "lowpower", tmp_path / "out")
    _assert_integer_bundle_matches_onnxruntime(bundle, "qlinearconv")


def test_qlinear_conv_accumulators_beyond_float32_precision_match_onnxruntime(tmp_path):
    # 16 channels x 6x6 taps of 255 * 255: accumulators up to 37.4e6 > 2^24, rounded to float32 as onnxruntime does.
    weights = np.full((2, 16, 6, 6), 255, np.uint8)
    constants = [numpy_helper.from_array(weights, "w"), *_quant("x", 1.0, 0, np.uint8), *_quant("w", 1.0, 0, np.uint8),
                 *_quant("y", 1.7e5, 3, np.uint8)]
    node = helper.make_node("QLinearConv", ["x", "x_scale", "x_zero_point", "w", "w_scale", "w_zero_point", "y_scale",
                                            "y_zero_point"], ["y"], name="conv")
    path = _save(tmp_path, node, [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 16, 7, 7])],
                 TensorProto.UINT8, constants, 10)
    _assert_integer_bundle_matches_onnxruntime(compile(path, "lowpower", tmp_path / "out"), "qlinearconv")


@pytest.mark.parametrize(("dtype", "b_scale"), [(np.uint8, 0.05), (np.int8, [0.01, 0.02, 0.03, 0.04, 0.5])])
def test_qlinear_matmul_matches_onnxruntime(tmp_path, dtype, b_scale):
    rng = np.random.default_rng(3)
    info = np.iinfo(dtype)
    b = rng.integers(info.min, info.max + 1, (6, 5)).astype(dtype)
    zero_point = 0 if dtype == np.int8 else 100
    constants = [numpy_helper.from_array(b, "b"), *_quant("a", 0.04, zero_point, dtype),
                 *_quant("b", b_scale, np.full(np.shape(b_scale), zero_point, dtype), dtype),
                 *_quant("y", 0.3, 7, dtype)]
    node = helper.make_node("QLinearMatMul", ["a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point",
                                              "y_scale", "y_zero_point"], ["y"], name="matmul")
    path = _save(tmp_path, node, [helper.make_tensor_value_info("a", ONNX_TYPE[dtype], [3, 6])], ONNX_TYPE[dtype],
                 constants, 21)
    _assert_integer_bundle_matches_onnxruntime(compile(path, "lowpower", tmp_path / "out"), "qlinearmatmul")


def test_a_requantization_of_a_requantized_value_reads_its_input_once():
    """Rounding and saturating bind their operand once: a QuantizeLinear of a value computed from another
    (a QDQ hard-swish's epilogue after its convolution's) read the inner value's expression once per use of
    it in the outer rounding, 7 x 7 times, and its C grew with the depth of such chains."""
    from tvm import te, tirx

    x = te.placeholder((4,), "float32", name="x")
    zero = tirx.const(3, "int32")
    inner = lambda i: saturate_half_to_even(x[i] * tirx.const(0.5, "float32"), zero, "int8")  # noqa: E731
    y = te.compute((4,), lambda i: saturate_half_to_even(inner(i).astype("float32") * tirx.const(0.25, "float32"),
                                                         zero, "int8"), name="y")
    func = te.create_prim_func([x, y])
    assert list(tir_walk.buffer_loads(func.body).values()) == [1]


def test_round_half_to_even_is_exact_on_ties_and_large_values():
    import tvm
    from tvm import te

    values = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 2.5000002, 8388607.5, -8388609.0, 3e9, 1e-40],
                      np.float32)
    x = te.placeholder(values.shape, "float32", name="x")
    y = te.compute(values.shape, lambda i: round_half_to_even(x[i]), name="y")
    run = tvm.compile(te.create_prim_func([x, y]), target="llvm")
    out = tvm.runtime.tensor(np.zeros_like(values))
    run(tvm.runtime.tensor(values), out)
    np.testing.assert_array_equal(out.numpy(), np.rint(values))


def _one_group_conv(tmp_path, case: str, x_shape: list[int]):
    """The path of a QLinearConv model of CONV_CASES[case] (one group, without its bias) over an x of ``x_shape``."""
    x_type, w_type, (x_scale, w_scale, y_scale), weight_high, _, attrs = CONV_CASES[case]
    rng = np.random.default_rng(7)
    info = np.iinfo(w_type)
    low, high = (info.min, info.max) if weight_high is None else (-weight_high, weight_high)
    weights = rng.integers(low, high + 1, (4, x_shape[1], 3, 3)).astype(w_type)
    w_zero_point = np.zeros(np.shape(w_scale), w_type) if w_type == np.int8 else np.full(np.shape(w_scale), 131, w_type)
    x_zero_point = 128 if x_type == np.uint8 else -3
    constants = [numpy_helper.from_array(weights, "w"), *_quant("x", x_scale, x_zero_point, x_type),
                 *_quant("w", w_scale, w_zero_point, w_type), *_quant("y", y_scale, 5, x_type)]
    node = helper.make_node("QLinearConv", ["x", "x_scale", "x_zero_point", "w", "w_scale", "w_zero_point", "y_scale",
                                            "y_zero_point"], ["y"], name="conv", **attrs)
    return _save(tmp_path, node, [helper.make_tensor_value_info("x", ONNX_TYPE[x_type], x_shape)],
                 ONNX_TYPE[x_type], constants, 10)


def test_qlinear_conv_on_a_dsp_core_reads_an_nhwc_copy_and_matches_onnxruntime(tmp_path):
    """On cortex-m4f a QLinearConv of enough MACs reads an NHWC copy of its input (a transpose kernel writes it:
    tvm_ext.transform.qlinear_channels_last) and OHWI weights, its window rows one run the dual MAC takes a word at
    a time; still onnxruntime's bit for bit, ties rounded half to even."""
    if missing_tools():
        pytest.skip("needs the Cortex-M tools")
    bundle = compile(_one_group_conv(tmp_path, "ties_round_half_to_even", [1, 8, 24, 24]), "cortex-m4f",
                     tmp_path / "out")
    _assert_integer_bundle_matches_onnxruntime(bundle, "qlinearconv")
    assert [call.kernel.split("_")[-2] for call in bundle.plan.calls][:1] == ["transpose"], bundle.plan.calls
    assert "dual_mac" in (bundle.out_dir / f"{bundle.plan.model}_kernels.c").read_text()


@pytest.mark.parametrize("case", ["ties_round_half_to_even", "uint8_per_tensor_pads_strides"])
def test_qlinear_conv_on_a_core_without_fpu_requantizes_in_integers_and_matches_onnxruntime(tmp_path, case):
    """On rv32imc (no floating-point unit) the QLinearConv kernel calls the bundle's integer helper of onnxruntime's
    float32 requantization (packager/templates/fixed_point_requantize_float32.h.in) instead of soft-float
    arithmetic, and still equals onnxruntime bit for bit, ties included."""
    if missing_tools(RISCV_TOOLS):
        pytest.skip("needs the RISC-V tools")
    bundle = compile(_one_group_conv(tmp_path, case, [1, 4, 9, 8]), "rv32imc", tmp_path / "out")
    _assert_integer_bundle_matches_onnxruntime(bundle, "qlinearconv")
    kernels = (bundle.out_dir / f"{bundle.plan.model}_kernels.c").read_text()
    assert "_requantize_float32(" in kernels and "floorf" not in kernels, kernels


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_a_max_pool_of_quantized_data_is_the_int8_pool_kernel_and_matches_onnxruntime(tmp_path, dtype):
    """A MaxPool between a DequantizeLinear and a QuantizeLinear of one scale runs on the quantized NCHW tensor (as
    onnxruntime runs it) as the integer pool kernel (tvm_ext.transform.int8.pool, "max_pool_2d"), not TVM's generic
    loop ("max_pool2d"), in ceil mode with padding: the last window of each axis runs past the padded input (9 x 12
    pooled to 5 x 6, floor mode's 4 x 5)."""
    zero_point = 128 if dtype == np.uint8 else -3
    nodes = [helper.make_node("QuantizeLinear", ["x", "q_scale", "q_zero_point"], ["x_q"], name="quantize"),
             helper.make_node("DequantizeLinear", ["x_q", "q_scale", "q_zero_point"], ["x_f"], name="dequantize"),
             helper.make_node("MaxPool", ["x_f"], ["p"], name="pool", kernel_shape=[3, 3], strides=[2, 2],
                              pads=[1, 0, 0, 0], ceil_mode=1),
             helper.make_node("QuantizeLinear", ["p", "q_scale", "q_zero_point"], ["p_q"], name="requantize"),
             helper.make_node("DequantizeLinear", ["p_q", "q_scale", "q_zero_point"], ["y"], name="output")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 9, 12])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              _quant("q", 0.05, zero_point, dtype))
    path = tmp_path / "max_pool.onnx"
    onnx.save(onnx.shape_inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])),
              str(path))
    bundle = compile(path, "lowpower", tmp_path / "out")
    assert bundle.selftest.passed and "onnxruntime" in bundle.selftest.output, bundle.selftest.output
    kernels = [call.kernel for call in bundle.plan.calls]
    assert any("max_pool_2d" in k for k in kernels) and not any("max_pool2d" in k for k in kernels), kernels


@pytest.mark.parametrize("case", ["ties_round_half_to_even", "uint8_per_tensor_pads_strides"])
def test_a_padded_depthwise_qlinear_conv_reads_a_padded_copy_and_matches_onnxruntime(tmp_path, case):
    """A depthwise QLinearConv with padding reads a copy of its input padded with the input's zero point (a PAD
    kernel: tvm_ext.transform.qlinear_depthwise_padded), so that its kernel tests no tap for lying in the padding;
    still onnxruntime's bit for bit (weights with a zero point too: uint8's 131), built for cortex-m4f (the PAD kernel
    as copy runs) without warnings."""
    if missing_tools():
        pytest.skip("needs the Cortex-M tools")
    x_type, w_type, (x_scale, w_scale, y_scale), weight_high, _, attrs = CONV_CASES[case]
    rng = np.random.default_rng(11)
    info = np.iinfo(w_type)
    low, high = (info.min, info.max) if weight_high is None else (-weight_high, weight_high)
    weights = rng.integers(low, high + 1, (4, 1, 3, 3)).astype(w_type)
    w_zero_point = np.zeros(np.shape(w_scale), w_type) if w_type == np.int8 else np.full(np.shape(w_scale), 131, w_type)
    x_zero_point = 128 if x_type == np.uint8 else -3
    constants = [numpy_helper.from_array(weights, "w"), *_quant("x", x_scale, x_zero_point, x_type),
                 *_quant("w", w_scale, w_zero_point, w_type), *_quant("y", y_scale, 5, x_type)]
    node = helper.make_node("QLinearConv", ["x", "x_scale", "x_zero_point", "w", "w_scale", "w_zero_point", "y_scale",
                                            "y_zero_point"], ["y"], name="conv", group=4,
                            **{"pads": [1, 1, 1, 1], **attrs})
    path = _save(tmp_path, node, [helper.make_tensor_value_info("x", ONNX_TYPE[x_type], [1, 4, 9, 8])],
                 ONNX_TYPE[x_type], constants, 10)
    bundle = compile(path, "cortex-m4f", tmp_path / "out")
    _assert_integer_bundle_matches_onnxruntime(bundle, "qlinearconv")
    pad, conv = bundle.plan.calls
    assert "_pad_" in pad.kernel and "qlinearconv" in conv.kernel and conv.inputs[0] == pad.outputs[0], (pad, conv)
    # over the padded copy, its 3x3 window one sum of nine products (KernelSchedules.qlinear_unrolled_taps), no
    # loop over the window's rows; its MACs declared, as a reduction's would be counted: 4 channels x 9 taps per pixel
    kernels = next(bundle.out_dir.glob("*_kernels.c")).read_text()
    assert not re.search(r"\bry\b", kernels.split(conv.kernel + "(", 1)[1].split("\n}\n", 1)[0])
    out_h, out_w = bundle.plan.tensors[conv.outputs[0]].shape[2:]
    assert conv.macs == 4 * 9 * out_h * out_w, conv.macs


def test_unpadded_depthwise_qlinear_convs_of_one_shape_share_a_kernel_that_builds(tmp_path):
    """Two unpadded depthwise QLinearConvs of one shape but other zero points run one kernel, their zero points in
    its constants table; its unrolled window (KernelSchedules.qlinear_unrolled_taps) tests no tap for lying in
    the padding, so reads no input zero point. Before, the table's x zero point stayed an unused local variable
    (mobilenet_v3_small_050_56_int8's 5x5 layers: the build failed under -Werror on cortex-m4f)."""
    if missing_tools():
        pytest.skip("needs the Cortex-M tools")
    rng = np.random.default_rng(5)
    constants, nodes, outputs = [], [], []
    for index, (x_zero_point, y_zero_point) in enumerate([(-3, 4), (4, -9)]):
        prefix = f"c{index}_"
        constants += [numpy_helper.from_array(rng.integers(-127, 128, (4, 1, 3, 3)).astype(np.int8), prefix + "w"),
                      *_quant(prefix + "x", 0.05, x_zero_point, np.int8), *_quant(prefix + "w", 0.02, 0, np.int8),
                      *_quant(prefix + "y", 0.3 + index, y_zero_point, np.int8)]
        operands = ["x", *(prefix + name for name in ("x_scale", "x_zero_point", "w", "w_scale", "w_zero_point",
                                                      "y_scale", "y_zero_point"))]
        nodes.append(helper.make_node("QLinearConv", operands, [f"y{index}"], name=f"conv{index}", group=4))
        outputs.append(helper.make_tensor_value_info(f"y{index}", TensorProto.INT8, None))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.INT8, [1, 4, 9, 8])],
                              outputs, constants)
    path = tmp_path / "depthwise_pair.onnx"
    onnx.save(onnx.shape_inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])),
              str(path))
    bundle = compile(path, "cortex-m4f", tmp_path / "out")
    _assert_integer_bundle_matches_onnxruntime(bundle, "qlinearconv")
    assert len({call.kernel for call in bundle.plan.calls}) == 1, [call.kernel for call in bundle.plan.calls]
