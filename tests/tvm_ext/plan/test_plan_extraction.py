"""Plan extraction on a tiny hand-built Relax module: calls, roles, views, weights, layers, plain C."""

from __future__ import annotations

import numpy as np
import tvm
from tvm import relax

from memory_planner.plan import TensorRole
from target import load_profile
from tvm_ext.codegen.codegen_c import generate_c
from tvm_ext.plan.extract_plan import extract_plan, unique_kernels
from tvm_ext.frontend import ImportedModel, TensorSpec
from tvm_ext.layers import LayerRecord, with_layers
from tvm_ext.lower import pipeline


def tiny_model() -> ImportedModel:
    """x[1,8] -> dense(8->4)+bias -> relu (layer "fc") -> reshape [2,2] -> softmax (layer "softmax")."""
    rng = np.random.default_rng(0)
    weight = relax.const(rng.normal(size=(8, 4)).astype("float32"))
    bias = relax.const(rng.normal(size=(4,)).astype("float32"))
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 8), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            mm = bb.emit(relax.op.matmul(x, weight))
            fc = bb.emit(relax.op.nn.relu(relax.op.add(mm, bias)))
            flat = bb.emit(relax.op.reshape(fc, (2, 2)))
            out = bb.emit_output(bb.emit(relax.op.nn.softmax(flat)))
        bb.emit_func_output(out)
    mod = bb.get()
    records = [LayerRecord("fc", "Gemm", 0), LayerRecord("softmax", "Softmax", 1)]
    # Bindings: matmul, add (normalized out of the relu), relu -> fc; reshape, softmax, output -> softmax.
    mod["main"] = with_layers(mod["main"], records, [[0], [0], [0], [1], [1], [1]])
    return ImportedModel("tiny", __import__("pathlib").Path("tiny.onnx"), "onnx", mod, records,
                         [TensorSpec("x", (1, 8), "float32")], [TensorSpec("y", (2, 2), "float32")])


def test_plan_of_a_tiny_module():
    model = tiny_model()
    lowered = pipeline(layout="NCHW")(model.mod)
    kernels, c_name_of = unique_kernels(lowered, "tiny")
    source = generate_c(kernels, tvm.target.Target({"kind": "c"}))
    plan, constants = extract_plan(lowered, model, load_profile("lowpower"), c_name_of, source.signatures)

    assert [call.layers for call in plan.calls] == [("fc (Gemm)",), ("softmax (Softmax)",)]
    fc, softmax = plan.calls
    assert plan.tensors[fc.inputs[0]].role is TensorRole.INPUT
    assert [plan.tensors[a].role for a in fc.inputs[1:]] == [TensorRole.CONSTANT, TensorRole.CONSTANT]
    # The reshape is a view: softmax reads fc's output bytes, and no kernel copies them.
    assert plan.storage_of(softmax.inputs[0]) == fc.outputs[0]
    assert plan.tensors[softmax.inputs[0]].view_of == fc.outputs[0]
    assert plan.tensors[fc.outputs[0]].role is TensorRole.INTERMEDIATE
    assert plan.tensors[plan.storage_of(plan.outputs[0])].role is TensorRole.OUTPUT
    assert {k: v.shape for k, v in constants.items()} == {"l0_weights": (8, 4), "l0_bias": (4,)}
    assert plan.weight_bytes() == (32 + 4) * 4

    assert "tvm/" not in source.c_text and "TVMBackend" not in source.c_text
    for call in plan.calls:
        sig = source.signatures[call.kernel]
        assert (sig.num_inputs, sig.num_outputs) == (len(call.inputs), len(call.outputs))
        assert f"void {call.kernel}(const float* " in source.c_text
