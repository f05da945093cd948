"""Float ONNX models, channels-first (NCHW convolutions and pools, OIHW weights, depthwise included) or with
(in, out) matmul weights, quantize as TFLite-form models do: quantize.tflite_form rewrites main into the
form the quantizer reads, the same function; the quantized model stays close to onnxruntime's float outputs;
a Relu after a Conv and an Add after a MatMul join the MAC's layer, as TFLite fuses them; the bundle is
bit-exact with its integer reference. (Before, `--quantize` refused every NCHW convolution, the built-in
example's first.)"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from conftest import models_dir
from onnx_conv_nets import residual_conv_net

pytestmark = pytest.mark.slow  # each imports, quantizes or compiles a model: 5-40 s on the shared machine

PROFILE = "cortex-m4f"


def matmul_net(seed: int = 0) -> onnx.ModelProto:
    """x (1, 16) -> Gemm with a (16, 12) weight (transB = 0) and its bias -> Relu -> MatMul with a (12, 4)
    weight -> Add of its bias: fully connected layers whose weights are stored (in, out), as PyTorch exports
    Linear layers (a MatMul and an Add node where the input has more than two dimensions)."""
    rng = np.random.default_rng(seed)

    def weights(name: str, shape: tuple[int, ...]) -> onnx.TensorProto:
        values = (rng.standard_normal(int(np.prod(shape))) * 0.4).astype(np.float32)
        return helper.make_tensor(name, TensorProto.FLOAT, shape, values)

    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["m1"], name="fc1"),
             helper.make_node("Relu", ["m1"], ["r1"], name="relu1"),
             helper.make_node("MatMul", ["r1", "w2"], ["m2"], name="fc2"),
             helper.make_node("Add", ["m2", "b2"], ["y"], name="bias2")]
    graph = helper.make_graph(nodes, "matmul_net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
                              [weights("w1", (16, 12)), weights("b1", (12,)), weights("w2", (12, 4)),
                               weights("b2", (4,))])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def conv_activation_net(activation: str, seed: int = 0) -> onnx.ModelProto:
    """x (1, 3, 12, 12) -> Conv 3x3 (8 filters, pad 1) -> `activation` ("Clip": ReLU6 with constant bounds
    as inputs, as PyTorch exports it; "Sigmoid"; "HardSwish"; "Mul": by the constant 0.5) -> y (1, 8, 12,
    12): a channels-first output, so the quantized model ends in a transpose back to NCHW."""
    rng = np.random.default_rng(seed)
    initializers = [helper.make_tensor("w", TensorProto.FLOAT, (8, 3, 3, 3), rng.standard_normal(216) * 0.3),
                    helper.make_tensor("b", TensorProto.FLOAT, (8,), rng.standard_normal(8) * 0.3),
                    helper.make_tensor("low", TensorProto.FLOAT, (), [0.0]),
                    helper.make_tensor("high", TensorProto.FLOAT, (), [6.0]),
                    helper.make_tensor("half", TensorProto.FLOAT, (), [0.5])]
    inputs = {"Clip": ["c", "low", "high"], "Mul": ["c", "half"]}.get(activation, ["c"])
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node(activation, inputs, ["y"], name="act")]
    graph = helper.make_graph(nodes, f"conv_{activation}", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                                          [1, 3, 12, 12])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 12, 12])], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def pools_joined_net(seed: int = 3) -> onnx.ModelProto:
    """x (1, 3, 8, 8) -> Conv 3x3 (4 filters, no bias) -> AveragePool 2x2 and MaxPool 2x2 -> Concat on the
    channels -> y (1, 8, 4, 4): TFLite Micro's int8 CONCATENATION needs its inputs quantized as its output."""
    rng = np.random.default_rng(seed)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("AveragePool", ["c"], ["a"], name="average", kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("MaxPool", ["c"], ["m"], name="max", kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Concat", ["a", "m"], ["y"], name="joined", axis=1)]
    graph = helper.make_graph(nodes, "pools_joined", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                                    [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 4, 4])],
                              [helper.make_tensor("w", TensorProto.FLOAT, (4, 3, 3, 3),
                                                  rng.standard_normal(108) * 0.3)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def conv_batch_norm_net(seed: int = 4) -> onnx.ModelProto:
    """x (1, 3, 12, 12) -> Conv 3x3 (8 filters, bias) -> BatchNormalization (inference) -> Relu: a
    normalization some exporters leave unfolded; TFLite's converter folds it into the convolution."""
    rng = np.random.default_rng(seed)
    stats = {"gamma": rng.uniform(0.5, 1.5, 8), "beta": rng.standard_normal(8) * 0.2,
             "mean": rng.standard_normal(8) * 0.2, "var": rng.uniform(0.5, 2.0, 8)}
    initializers = [helper.make_tensor("w", TensorProto.FLOAT, (8, 3, 3, 3), rng.standard_normal(216) * 0.3),
                    helper.make_tensor("b", TensorProto.FLOAT, (8,), rng.standard_normal(8) * 0.3),
                    *(helper.make_tensor(name, TensorProto.FLOAT, (8,), values) for name, values in stats.items())]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", *stats], ["n"], name="norm"),
             helper.make_node("Relu", ["n"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "conv_batch_norm", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                                       [1, 3, 12, 12])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 12, 12])], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


NETS = {"conv": lambda: residual_conv_net(), "depthwise": lambda: residual_conv_net(group=8),
        "matmul": matmul_net, "relu6": lambda: conv_activation_net("Clip"),
        "sigmoid": lambda: conv_activation_net("Sigmoid"), "hardswish": lambda: conv_activation_net("HardSwish"),
        "scaled": lambda: conv_activation_net("Mul"), "concat": pools_joined_net, "batch_norm": conv_batch_norm_net}
# The first layers of each net once quantized: a Relu or Add after a MAC joins it, as TFLite fuses them.
FIRST_LAYERS = {"conv": ["conv1 (Conv), relu1 (Relu)", "pool1 (MaxPool)", "conv2 (Conv), relu2 (Relu)"],
                "depthwise": ["conv1 (Conv), relu1 (Relu)", "pool1 (MaxPool)", "conv2 (Conv), relu2 (Relu)"],
                "matmul": ["fc1 (Gemm), relu1 (Relu)", "fc2 (MatMul), bias2 (Add)"],
                "relu6": ["conv (Conv), act (Clip)"], "sigmoid": ["conv (Conv)", "act (Sigmoid)"],
                "hardswish": ["conv (Conv)", "act (HardSwish)"], "scaled": ["conv (Conv)", "act (Mul)"],
                "concat": ["conv (Conv)", "average (AveragePool)", "max (MaxPool)"]}


@pytest.fixture(scope="module")
def net_files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("channels_first")
    files = {}
    for name, build in NETS.items():
        files[name] = folder / f"{name}_net.onnx"
        onnx.save(build(), files[name])
    return files


def imported(path: Path):
    from tvm_ext.frontend import import_model

    return import_model(path)


def profile():
    import target

    return target.load_profile(PROFILE)


def samples(model, count: int, seed: int) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [[rng.uniform(-1, 1, spec.shape).astype(np.float32) for spec in model.inputs] for _ in range(count)]


@pytest.mark.parametrize("net", NETS)
def test_the_quantizable_form_is_channels_last_with_tflite_weights_and_computes_the_same(net, net_files):
    from tvm.ir.expr import Constant

    from tvm_ext.layers import bindings_of
    from tvm_ext.quantize.tflite_form import quantizable_form
    from tvm_ext.quantize.ranges import run_on_samples

    model = imported(net_files[net])
    form = quantizable_form(model.mod, profile())
    bindings = bindings_of(form["main"])
    value_of = {b.var: b.value for b in bindings}
    calls = [b.value for b in bindings if isinstance(b.value, __import__("tvm").relax.Call)]
    convs = [c for c in calls if c.op.name == "relax.nn.conv2d"]
    assert all(str(c.attrs.data_layout) == "NHWC" and isinstance(c.args[1], Constant) for c in convs)
    assert [str(c.attrs.kernel_layout) for c in convs] == {"conv": ["HWIO", "HWIO"], "depthwise": ["HWIO", "HWOI"],
                                                           "matmul": []}.get(net, ["HWIO"])
    assert all(str(c.attrs.layout) == "NHWC" for c in calls if c.op.name == "relax.nn.max_pool2d")
    matmul_weights = [value_of[c.args[1]] for c in calls if c.op.name == "relax.matmul"]
    assert len(matmul_weights) == {"conv": 1, "depthwise": 1, "matmul": 2}.get(net, 0)
    assert all(w.op.name == "relax.permute_dims" and isinstance(w.args[0], Constant) for w in matmul_weights)
    assert not [c for c in calls if c.op.name == "relax.nn.batch_norm"], "folded into the convolution"
    if net in ("relu6", "hardswish"):  # a clip follows its input's layout: no transpose around it
        transposes = [c for c in calls if c.op.name == "relax.permute_dims" and not isinstance(c.args[0], Constant)]
        assert len(transposes) == 2, "one at the input, one at the output"
    inputs = samples(model, 3, seed=7)
    for before, after in zip(run_on_samples(model.mod, inputs), run_on_samples(form, inputs)):
        np.testing.assert_allclose(after[0], before[0], rtol=1e-5, atol=1e-5)


def test_a_model_in_tflite_form_is_returned_as_it_is():
    from tvm_ext.quantize.tflite_form import quantizable_form

    model = imported(models_dir() / "tflm/hello_world_float.tflite")
    assert quantizable_form(model.mod, profile()) is model.mod


@pytest.mark.parametrize("net", NETS)
def test_the_quantized_model_stays_close_to_onnxruntimes_float_outputs(net, net_files):
    """50 inputs from the calibration's distribution (another seed): onnxruntime's float outputs against our
    integer module's, dequantized. Relative error (norm of the difference / norm of the float outputs)
    measured 0.4-2.5% for these nets; a layout or weight order taken wrongly gives about 100%."""
    import onnxruntime

    from tvm_ext.quantize import load_calibration, quantize_model
    from tvm_ext.quantize.ranges import run_on_samples

    model = imported(net_files[net])
    quantized = quantize_model(model, load_calibration("random", model.inputs), profile())
    assert quantized.facts["dtype"] == "int8"
    if net in FIRST_LAYERS:  # (the ONNX importer records no layer for a BatchNormalization)
        assert [layer.layer for layer in quantized.layers][:3] == FIRST_LAYERS[net]
    (input_quant,), (output_quant,) = quantized.facts["inputs"], quantized.facts["outputs"]
    inputs = samples(model, 50, seed=5)
    session = onnxruntime.InferenceSession(str(net_files[net]), providers=["CPUExecutionProvider"])
    expected = np.concatenate([session.run(None, {model.inputs[0].name: x})[0].ravel() for (x,) in inputs])
    integer_inputs = [[np.clip(np.round(x / input_quant["scale"]) + input_quant["zero_point"], -128, 127)
                       .astype(np.int8)] for (x,) in inputs]
    got = np.concatenate([(out.astype(np.float64).ravel() - output_quant["zero_point"]) * output_quant["scale"]
                          for (out, *_) in run_on_samples(quantized.mod, integer_inputs)])
    relative_error = np.linalg.norm(got - expected) / np.linalg.norm(expected)
    assert relative_error < 0.05, relative_error


def test_a_quantized_depthwise_channels_first_bundle_is_bit_exact_with_its_integer_reference(net_files, tmp_path,
                                                                                             cli_in_process):
    out = tmp_path / "out"
    proc = cli_in_process(str(net_files["depthwise"]), "--quantize", "int8", "--calibration", "random", "--target",
                          "lowpower", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["selftest"]["passed"] and manifest["selftest"]["atol_lsb"] == 0
    assert all(output["bit_identical"] for output in manifest["selftest"]["outputs"])
    assert [layer["precision"] for layer in manifest["quantization"]["layer_errors"]] == ["int8"] * len(
        manifest["quantization"]["layer_errors"])
    # The bundle keeps the ONNX model's NCHW int8 input, and says so with the quantizer's scale.
    (entry,) = [t for t in manifest["tensors"] if t["name"] == manifest["inputs"][0]]
    chosen = manifest["quantization"]["inputs"][0]
    assert entry["layout"] == "NCHW" and entry["quantization"]["scale"] == chosen["scale"]
    header = (out / f"{manifest['model']}.h").read_text()
    assert '_INPUT0_LAYOUT "NCHW"' in header and "_quantize_input0(" in header



def test_a_concatenations_pieces_and_the_layer_their_pools_read_share_its_union_range(net_files):
    """The conv output, its two pools and their concatenation form one group (the pools keep their input's
    quantization): each gets the union of the group's ranges; a model without a concatenation keeps its
    ranges (the same dict)."""
    from tvm_ext.quantize.qdq import layer_outputs
    from tvm_ext.quantize.shared_ranges import shared_concatenation_ranges
    from tvm_ext.quantize.tflite_form import quantizable_form

    main = quantizable_form(imported(net_files["concat"]).mod, profile())["main"]
    taps = layer_outputs(main)  # the conv's output, the two pools', the concatenation's (back in NCHW)
    ranges = {var: (-float(i), float(2 * i)) for i, var in enumerate(taps, start=1)}
    assert len(taps) == 4
    assert set(shared_concatenation_ranges(main, ranges).values()) == {(-4.0, 8.0)}
    conv_main = quantizable_form(imported(net_files["relu6"]).mod, profile())["main"]
    conv_ranges = {var: (0.0, 1.0) for var in layer_outputs(conv_main)}
    assert shared_concatenation_ranges(conv_main, conv_ranges) is conv_ranges
