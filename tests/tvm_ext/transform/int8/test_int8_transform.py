"""LowerQuantizedToInteger on hand-built QDQ Relax modules (the form TVM's TFLite frontend emits)."""

from __future__ import annotations

import numpy as np
import pytest

import tvm
from tvm import relax

import tflite_int8_reference as ref
from tvm_ext.transform import LowerQuantizedToInteger, UnsupportedOperatorError
from tvm_ext.layers import FALLBACK_ATTR, Layers

IN_SCALE, IN_ZP = np.float32(0.0244801), -128
W_SCALE = np.float32(0.0040390)
OUT_SCALE, OUT_ZP = np.float32(0.0133251), 5


def _const(value, dtype: str) -> relax.Expr:
    return relax.const(np.asarray(value, dtype))


def _dq(bb, x, scale, zp, axis=0):
    return bb.emit(relax.op.dequantize(x, _const(scale, "float32"), _const(zp, "int32"), axis=axis))


def _q(bb, x, scale, zp):
    return bb.emit(relax.op.quantize(x, _const(scale, "float32"), _const(zp, "int32"), axis=0, out_dtype="int8"))


def _run(mod: tvm.IRModule, *inputs: np.ndarray) -> np.ndarray:
    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())
    return vm["main"](*[tvm.runtime.tensor(x) for x in inputs]).numpy()


def _fully_connected_module(weight: np.ndarray, bias: np.ndarray, float_edges: bool) -> tvm.IRModule:
    """[quantize ->] FULLY_CONNECTED [-> dequantize], as the frontend writes it."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((2, weight.shape[1]), "float32" if float_edges else "int8"))
    with bb.function("main", [x]):
        with bb.dataflow():
            data = _q(bb, x, IN_SCALE, IN_ZP) if float_edges else x
            lhs = _dq(bb, data, IN_SCALE, IN_ZP)
            rhs = _dq(bb, bb.emit(relax.op.permute_dims(relax.const(weight), [1, 0])), W_SCALE, 0, axis=1)
            acc = bb.emit(relax.op.add(bb.emit(relax.op.matmul(lhs, rhs)),
                                       _dq(bb, relax.const(bias), IN_SCALE * W_SCALE, 0)))
            out = _q(bb, acc, OUT_SCALE, OUT_ZP)
            if float_edges:
                out = _dq(bb, out, OUT_SCALE, OUT_ZP)
            result = bb.emit_output(out)
        bb.emit_func_output(result)
    return bb.get()


def _fc_reference(x_int8, weight, bias, single_rounding: bool) -> np.ndarray:
    product = np.float32(IN_SCALE) * np.float32(W_SCALE)
    multiplier, shift = ref.quantize_multiplier(float(product) / float(OUT_SCALE), single_rounding)
    return ref.fully_connected(x_int8, weight, bias, IN_ZP, OUT_ZP, multiplier, shift, single_rounding=single_rounding)


@pytest.fixture(scope="module")
def fc_case():
    rng = np.random.default_rng(11)
    weight = rng.integers(-128, 128, (6, 40)).astype(np.int8)
    bias = rng.integers(-3000, 3000, 6).astype(np.int32)
    inputs = [rng.integers(-128, 128, (2, 40)).astype(np.int8) for _ in range(30)]
    return weight, bias, inputs


@pytest.mark.parametrize("rounding", ["double", "single"])
def test_rounding_mode_is_a_pass_parameter(fc_case, rounding):
    weight, bias, inputs = fc_case
    lowered = LowerQuantizedToInteger(rounding=rounding)(_fully_connected_module(weight, bias, float_edges=False))
    vm = relax.VirtualMachine(relax.build(lowered, target="llvm"), tvm.cpu())
    other = "single" if rounding == "double" else "double"
    differs_from_other_mode = False
    for x in inputs:
        got = vm["main"](tvm.runtime.tensor(x)).numpy()
        np.testing.assert_array_equal(got, _fc_reference(x, weight, bias, rounding == "single"))
        differs_from_other_mode |= bool(np.any(got != _fc_reference(x, weight, bias, other == "single")))
    assert differs_from_other_mode, "inputs too easy: both rounding modes agree everywhere"


def test_float_model_edges_become_quantize_and_dequantize_kernels(fc_case):
    weight, bias, _ = fc_case
    lowered = LowerQuantizedToInteger()(_fully_connected_module(weight, bias, float_edges=True))
    assert [record.label for record in Layers.of(lowered["main"]).records] == ["QUANTIZE #0", "FULLY_CONNECTED #1",
                                                                            "DEQUANTIZE #2"]
    x = np.linspace(-4.0, 3.0, 80, dtype=np.float32).reshape(2, 40)
    quantized = np.clip(np.sign(x / IN_SCALE) * np.floor(np.abs(x / IN_SCALE) + 0.5) + IN_ZP, -128, 127).astype(np.int8)
    want = (np.float64(OUT_SCALE) * (_fc_reference(quantized, weight, bias, False).astype(np.int64) - OUT_ZP)).astype(np.float32)
    np.testing.assert_array_equal(_run(lowered, x), want)


def _unlowered_module() -> tvm.IRModule:
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 8), "int8"))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = _q(bb, bb.emit(relax.op.exp(_dq(bb, x, IN_SCALE, IN_ZP))), np.float32(1 / 256), -128)
            result = bb.emit_output(y)
        bb.emit_func_output(result)
    return bb.get()


def test_operator_without_exact_lowering_is_an_error_naming_model_and_operator():
    with pytest.raises(UnsupportedOperatorError) as error:
        LowerQuantizedToInteger(model_name="tiny.tflite")(_unlowered_module())
    assert str(error.value).startswith("tiny.tflite: operator relax.exp at layer lv2 ")


def test_float_fallback_keeps_the_qdq_path_and_records_the_layer():
    original = _unlowered_module()
    lowered = LowerQuantizedToInteger(allow_float_fallback=True)(original)
    assert [str(layer) for layer in lowered["main"].attrs[FALLBACK_ATTR]] == ["relax.exp lv2"]
    x = np.arange(-128, 128, 32, dtype=np.int8).reshape(1, 8)
    np.testing.assert_array_equal(_run(lowered, x), _run(original, x))


def test_max_pool_with_fused_clip_is_lowered():
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 7, 6, 3), "int8"))
    with bb.function("main", [x]):
        with bb.dataflow():
            pooled = bb.emit(relax.op.nn.max_pool2d(x, pool_size=(2, 3), strides=(2, 2), padding=(0, 1, 1, 1),
                                                    layout="NHWC"))
            result = bb.emit_output(bb.emit(relax.op.clip(pooled, -128, 60)))
        bb.emit_func_output(result)
    lowered = LowerQuantizedToInteger()(bb.get())
    data = np.random.default_rng(3).integers(-128, 128, (1, 7, 6, 3)).astype(np.int8)
    np.testing.assert_array_equal(_run(lowered, data), ref.max_pool2d(data, (2, 3), (2, 2), (0, 1, 1, 1), (-128, 60)))
