"""The bundle headers' quantize helpers (packager/templates/lp_quantize.h): their C unit tests (strict warnings,
sanitizers), a warning-free Cortex-M build, and bit-exactness on random values, ties and the type's ends with
what we did not write: TFLite Micro's QUANTIZE and DEQUANTIZE kernels (ties away from zero) and onnxruntime's
QuantizeLinear and DequantizeLinear (ties to even)."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

from c_checks import STRICT_WARNINGS, build_for_cortex_m, run_c_unit_tests
from tflite_builder import Model, Operator, Quantization, Tensor, build

REPO = Path(__file__).resolve().parents[2]
TEMPLATES = REPO / "packager" / "templates"
UNIT_TESTS = REPO / "tests" / "c" / "test_quantize_helpers.c"
AWAY, EVEN = 0, 1  # LP_ROUND_HALF_AWAY_FROM_ZERO, LP_ROUND_HALF_TO_EVEN
SUFFIX = {"int8": "s8", "uint8": "u8", "int16": "s16"}
# (dtype, scale, zero point): person_detect's input, kws_ref_model's input, a power of two (exact ties), 16x8.
QUANTIZATIONS = [("int8", 0.007843137718737125, -1), ("int8", 0.5847029089927673, 83), ("int8", 0.25, 3),
                 ("int16", 0.00030517578125, 0), ("int16", 0.0123, 0)]


def test_quantize_helpers_pass_their_unit_tests(tmp_path: Path) -> None:
    run = run_c_unit_tests(UNIT_TESTS, TEMPLATES, tmp_path)
    assert run.returncode == 0 and run.stdout.startswith("ok "), run.stdout + run.stderr


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="no arm-none-eabi-gcc")
def test_quantize_helpers_build_for_cortex_m_without_warnings(tmp_path: Path) -> None:
    build_for_cortex_m('#include "lp_quantize.h"\n'
                         "int8_t quantize(const float* v, int8_t* q, size_t n);\n"
                         "int8_t quantize(const float* v, int8_t* q, size_t n)\n"
                         "{ lp_quantize_s8(v, q, n, 0.5f, 1, LP_ROUND_HALF_TO_EVEN); return q[0]; }\n",
                         TEMPLATES, tmp_path)


@pytest.fixture(scope="module")
def helpers(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    """The helpers built with the strict warnings into a shared library, each type's pair exported."""
    folder = tmp_path_factory.mktemp("quantize_helpers")
    source = folder / "exported.c"
    source.write_text('#include "lp_quantize.h"\n' + "".join(
        f"void quantize_{s}(const float* v, {c}* q, size_t n, float scale, int32_t zp, int rounding)\n"
        f"{{ lp_quantize_{s}(v, q, n, scale, zp, rounding); }}\n"
        f"void dequantize_{s}(const {c}* q, float* v, size_t n, float scale, int32_t zp)\n"
        f"{{ lp_dequantize_{s}(q, v, n, scale, zp); }}\n"
        for s, c in (("s8", "int8_t"), ("u8", "uint8_t"), ("s16", "int16_t"))))
    library = folder / "libexported.so"
    subprocess.run(["gcc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Wno-missing-prototypes", *STRICT_WARNINGS.split(),
                    "-shared", "-fPIC", f"-I{TEMPLATES}", str(source), "-lm", "-o", str(library)], check=True)
    return ctypes.CDLL(str(library))


def quantized_by_helper(helpers: ctypes.CDLL, values: np.ndarray, dtype: str, scale: float, zero_point: int,
                        rounding: int) -> np.ndarray:
    values = np.ascontiguousarray(values, np.float32)
    out = np.zeros(values.shape, dtype)
    getattr(helpers, f"quantize_{SUFFIX[dtype]}")(
        ctypes.c_void_p(values.ctypes.data), ctypes.c_void_p(out.ctypes.data), ctypes.c_size_t(values.size),
        ctypes.c_float(scale), ctypes.c_int32(zero_point), ctypes.c_int(rounding))
    return out


def dequantized_by_helper(helpers: ctypes.CDLL, quantized: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    quantized = np.ascontiguousarray(quantized)
    out = np.zeros(quantized.shape, np.float32)
    getattr(helpers, f"dequantize_{SUFFIX[quantized.dtype.name]}")(
        ctypes.c_void_p(quantized.ctypes.data), ctypes.c_void_p(out.ctypes.data), ctypes.c_size_t(quantized.size),
        ctypes.c_float(scale), ctypes.c_int32(zero_point))
    return out


def sample_values(dtype: str, scale: float, zero_point: int, count: int = 4000, seed: int = 7) -> np.ndarray:
    """Random floats over twice the type's real range, the float32 values whose quotient by `scale` is a tie
    (k + 0.5) and their two neighbours, the range's ends, zeros of both signs. No value's quotient passes
    int32's range: TFLite Micro's conversion of one is undefined in C (we saturate it)."""
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    scale32 = np.float32(scale)
    low, high = float(scale32) * (info.min - zero_point), float(scale32) * (info.max - zero_point)
    random = rng.uniform(2 * low, 2 * high, count).astype(np.float32)
    steps = rng.integers(info.min - zero_point - 2, info.max - zero_point + 2, count) + 0.5
    near_ties = (steps * float(scale32)).astype(np.float32)
    ties = near_ties[near_ties / scale32 == steps.astype(np.float32)]
    assert ties.size > count // 10, "too few exact ties to test"
    neighbours = np.concatenate([np.nextafter(ties, np.float32(np.inf)), np.nextafter(ties, np.float32(-np.inf))])
    far = float(scale32) * 2e9  # a quotient near int32's end
    ends = np.array([low, high, 3 * low, 3 * high, far, -far, 0.0, -0.0], np.float32)
    return np.concatenate([random, ties, neighbours, ends]).astype(np.float32)


def tflite_quantize_model(dtype: str, scale: float, zero_point: int, count: int, dequantize: bool) -> bytes:
    quant = Quantization((scale,), (zero_point,))
    floats, integers = Tensor("real", (count,), "float32"), Tensor("quantized", (count,), dtype, quant)
    tensors, op = ([integers, floats], "DEQUANTIZE") if dequantize else ([floats, integers], "QUANTIZE")
    return build(Model(tensors, [Operator(op, inputs=(0,), outputs=(1,))], inputs=(0,), outputs=(1,)))


def run_tflite_micro(model: bytes, value: np.ndarray) -> np.ndarray:
    pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
    from tvm_ext.reference.runtimes import _tflite_micro_interpreter

    interpreter = _tflite_micro_interpreter(model)
    interpreter.set_input(value, 0)
    interpreter.invoke()
    return np.asarray(interpreter.get_output(0))


@pytest.mark.parametrize(("dtype", "scale", "zero_point"), QUANTIZATIONS)
def test_quantize_is_bit_exact_with_tflite_micro(helpers, dtype, scale, zero_point) -> None:
    values = sample_values(dtype, scale, zero_point)
    expected = run_tflite_micro(tflite_quantize_model(dtype, scale, zero_point, values.size, False), values)
    np.testing.assert_array_equal(quantized_by_helper(helpers, values, dtype, scale, zero_point, AWAY), expected)
    # The ties are where the two rules differ: the test would see the wrong one.
    assert not np.array_equal(quantized_by_helper(helpers, values, dtype, scale, zero_point, EVEN), expected)


@pytest.mark.parametrize(("dtype", "scale", "zero_point"), QUANTIZATIONS)
def test_dequantize_is_bit_exact_with_tflite_micro(helpers, dtype, scale, zero_point) -> None:
    info = np.iinfo(dtype)
    quantized = np.arange(info.min, info.max + 1, dtype=dtype)
    expected = run_tflite_micro(tflite_quantize_model(dtype, scale, zero_point, quantized.size, True), quantized)
    got = dequantized_by_helper(helpers, quantized, scale, zero_point)
    np.testing.assert_array_equal(got.view(np.uint32), expected.view(np.uint32))


def onnx_session(op: str, dtype: str, scale: float, zero_point: int, count: int) -> onnxruntime.InferenceSession:
    elem = {"int8": TensorProto.INT8, "uint8": TensorProto.UINT8, "int16": TensorProto.INT16}[dtype]
    data, result = (TensorProto.FLOAT, elem) if op == "QuantizeLinear" else (elem, TensorProto.FLOAT)
    graph = helper.make_graph(
        [helper.make_node(op, ["x", "scale", "zp"], ["y"])], "g",
        [helper.make_tensor_value_info("x", data, [count])], [helper.make_tensor_value_info("y", result, [count])],
        [numpy_helper.from_array(np.array(scale, np.float32), "scale"),
         numpy_helper.from_array(np.array(zero_point, dtype), "zp")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    return onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


@pytest.mark.parametrize(("dtype", "scale", "zero_point"),
                         [("int8", 0.007843137718737125, -1), ("uint8", 0.0235, 128), ("uint8", 0.5, 0),
                          ("int16", 0.0123, 0)])
def test_quantize_and_dequantize_are_bit_exact_with_onnxruntime(helpers, dtype, scale, zero_point) -> None:
    values = sample_values(dtype, scale, zero_point)
    expected = onnx_session("QuantizeLinear", dtype, scale, zero_point, values.size).run(None, {"x": values})[0]
    np.testing.assert_array_equal(quantized_by_helper(helpers, values, dtype, scale, zero_point, EVEN), expected)
    assert not np.array_equal(quantized_by_helper(helpers, values, dtype, scale, zero_point, AWAY), expected)
    info = np.iinfo(dtype)
    quantized = np.arange(info.min, info.max + 1, dtype=dtype)
    expected = onnx_session("DequantizeLinear", dtype, scale, zero_point, quantized.size).run(None, {"x": quantized})[0]
    np.testing.assert_array_equal(dequantized_by_helper(helpers, quantized, scale, zero_point).view(np.uint32),
                                  expected.view(np.uint32))
