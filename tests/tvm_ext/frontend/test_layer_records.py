"""Layer records (tvm_ext.layers) from the frontend through every pass to the plan: Before/Expected for
FuseOpsKeepingLayers and carry_layers, records of the int8 pass, and the labels of the example's bundle."""

from __future__ import annotations

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")
from tvm import relax  # noqa: E402

from target import load_profile  # noqa: E402
from tvm_ext.codegen.codegen_c import generate_c  # noqa: E402
from tvm_ext.example import write_example_model  # noqa: E402
from tvm_ext.plan.extract_plan import extract_plan, unique_kernels  # noqa: E402
from tvm_ext.frontend import import_model  # noqa: E402
from tvm_ext.layers import (ELEMENTWISE_LOOKUP_ATTR, LayerRecord, Layers, bindings_of, carry_layers,  # noqa: E402
                            keeping_layers, with_layers)
from tvm_ext.lower import pipeline  # noqa: E402
from memory_planner.plan import TensorRole  # noqa: E402
from tvm_ext.transform import FuseOpsKeepingLayers, LowerQuantizedToInteger  # noqa: E402

CONV1 = LayerRecord("conv1", "Conv", 0)
RELU1 = LayerRecord("relu1", "Relu", 1)
POOL1 = LayerRecord("pool1", "MaxPool", 2)
IMAGE = relax.TensorType((1, 2, 6, 6), "float32")


def _conv_relu_pool(rng: np.random.Generator) -> tuple[tvm.IRModule, relax.Expr, relax.Expr]:
    """Before: conv1 = conv2d + bias add, relu1, pool1 (each binding given its record, as the frontend
    does), legalized and annotated for FuseOps. Returns the module, the weight and the bias constants."""
    weight = relax.const(rng.normal(size=(4, 2, 3, 3)).astype("float32"))
    bias = relax.const(rng.normal(size=(1, 4, 1, 1)).astype("float32"))
    bb = relax.BlockBuilder()
    x = relax.Var("x", IMAGE)
    with bb.function("main", [x]):
        with bb.dataflow():
            conv = bb.emit(relax.op.nn.conv2d(x, weight, padding=1))
            biased = bb.emit(relax.op.add(conv, bias))
            relu = bb.emit(relax.op.nn.relu(biased))
            pooled = bb.emit(relax.op.nn.max_pool2d(relu, pool_size=2, strides=2))
            out = bb.emit_output(pooled)
        bb.emit_func_output(out)
    mod = bb.get()
    mod["main"] = with_layers(mod["main"], [CONV1, RELU1, POOL1], [[0], [0], [1], [2], [2]])
    mod = keeping_layers(relax.transform.LegalizeOps())(mod)
    return keeping_layers(relax.transform.AnnotateTIROpPattern())(mod), weight, bias


def _labels(func: relax.Function) -> list[list[str]]:
    layers = Layers.of(func)
    return [[record.label for record in layers.of_binding(i)] for i in range(len(bindings_of(func)))]


def test_fuse_ops_keeping_layers_gives_the_fused_kernel_every_layer_fused_into_it():
    before, weight, bias = _conv_relu_pool(np.random.default_rng(0))
    assert _labels(before["main"]) == [["conv1 (Conv)"], ["conv1 (Conv)"], ["relu1 (Relu)"], ["pool1 (MaxPool)"],
                                       ["pool1 (MaxPool)"]]
    fused = FuseOpsKeepingLayers()(before)
    main = fused["main"]
    # Expected: the fused conv2d+add+relu call is conv1 and relu1; the pool stays pool1 alone.
    assert [type(b.value.op).__name__ for b in bindings_of(main)[:2]] == ["GlobalVar", "Op"]
    assert _labels(main) == [["conv1 (Conv)", "relu1 (Relu)"], ["pool1 (MaxPool)"], ["pool1 (MaxPool)"]]
    layers = Layers.of(main)
    assert layers.records == (CONV1, RELU1, POOL1)
    # The weight and bias are read by conv1, not by the relu fused after it.
    assert layers.of_constant(weight) == (CONV1,)
    assert layers.of_constant(bias) == (CONV1,)


def test_fuse_ops_keeping_layers_leaves_the_callers_module_as_it_was():
    """A kernel marked as a table lookup is taken as elementwise in the module FuseOps reads, not in the
    module given to the pass (the pass mutated it in place)."""
    before, _, _ = _conv_relu_pool(np.random.default_rng(0))
    pool = next(gvar for gvar, func in before.functions.items()
                if isinstance(func, tvm.tirx.PrimFunc) and "pool" in gvar.name_hint)
    before.update_func(pool, before[pool].with_attr(ELEMENTWISE_LOOKUP_ATTR, True))
    pattern = int(before[pool].attrs["op_pattern"])
    FuseOpsKeepingLayers()(before)
    assert int(before[pool].attrs["op_pattern"]) == pattern != 0


def test_carry_layers_gives_a_new_inner_binding_the_layer_of_its_reader():
    """Before: y = relu(x) (layer 0). After (as LegalizeOps may emit): t = exp(x); y = relu(t): the new
    binding t belongs to the layer of y, its first reader."""
    vector = relax.TensorType((4,), "float32")
    x, y, t = (relax.Var(name, vector) for name in "xyt")
    record = LayerRecord("act", "Relu", 5)
    before = with_layers(relax.Function([x], relax.SeqExpr([relax.DataflowBlock(
        [relax.VarBinding(y, relax.op.nn.relu(x))])], y), vector), [record], [[0]])
    after = relax.Function([x], relax.SeqExpr([relax.DataflowBlock(
        [relax.VarBinding(t, relax.op.exp(x)), relax.VarBinding(y, relax.op.nn.relu(t))])], y), vector)
    carried = carry_layers(before, after)
    assert [Layers.of(carried).of_binding(i) for i in range(2)] == [(record,), (record,)]


def test_int8_kernel_records_take_the_operator_index_from_the_frontend_record():
    """A QDQ main whose bindings carry records with operator indices 7 (quantize) and 3 (dequantize): the
    kernels' records keep those indices (no index is rebuilt from binding positions)."""
    x = relax.Var("x", relax.TensorType((1, 4), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            q = bb.emit(relax.op.quantize(x, relax.const(0.5, "float32"), relax.const(1, "int32"), axis=0,
                                          out_dtype="int8"))
            dq = bb.emit(relax.op.dequantize(q, relax.const(0.5, "float32"), relax.const(1, "int32"), axis=0))
            out = bb.emit_output(dq)
        bb.emit_func_output(out)
    mod = bb.get()
    records = [LayerRecord("in_q", "QUANTIZE", 7), LayerRecord("out_dq", "DEQUANTIZE", 3)]
    mod["main"] = with_layers(mod["main"], records, [[0], [1], [1]])
    lowered = LowerQuantizedToInteger()(mod)
    assert Layers.of(lowered["main"]).records == tuple(records)
    assert _labels(lowered["main"])[:2] == [["in_q (QUANTIZE)"], ["out_dq (DEQUANTIZE)"]]


def test_example_weights_are_labelled_with_the_layer_that_reads_them(tmp_path):
    """The example's conv1 weights and bias belong to conv1 (Conv), not to relu1 fused after it."""
    path = tmp_path / "example.onnx"
    write_example_model(path)
    model = import_model(path)
    lowered = pipeline(layout="NCHW")(model.mod)
    kernels, c_name_of = unique_kernels(lowered, model.name)
    source = generate_c(kernels, tvm.target.Target({"kind": "c"}))
    plan, _ = extract_plan(lowered, model, load_profile("lowpower"), c_name_of, source.signatures)
    first = plan.calls[0]
    assert first.layers == ("conv1 (Conv)", "relu1 (Relu)")
    constants = [plan.tensors[name] for name in first.inputs if plan.tensors[name].role is TensorRole.CONSTANT]
    assert [tensor.layer for tensor in constants] == ["conv1 (Conv)", "conv1 (Conv)"]
    assert [call.layers for call in plan.calls[1:]] == [("pool1 (MaxPool)",), ("conv2 (Conv)", "relu2 (Relu)"),
                                                        ("global_pool (GlobalAveragePool)",), ("fc (Gemm)",),
                                                        ("softmax (Softmax)",)]


def test_frontend_records_each_onnx_node_with_its_index(tmp_path):
    path = tmp_path / "example.onnx"
    write_example_model(path)
    model = import_model(path)
    assert [(r.name, r.kind, r.operator_index) for r in model.layers] == [
        ("conv1", "Conv", 0), ("relu1", "Relu", 1), ("pool1", "MaxPool", 2), ("conv2", "Conv", 3),
        ("relu2", "Relu", 4), ("global_pool", "GlobalAveragePool", 5), ("flatten", "Flatten", 6), ("fc", "Gemm", 7),
        ("softmax", "Softmax", 8)]
    assert Layers.of(model.mod["main"]).records == tuple(model.layers)
