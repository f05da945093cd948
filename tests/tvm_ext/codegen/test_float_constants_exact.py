"""Every float constant in the generated C is exactly the TIR's: TVM prints a float constant with 7 significant
digits (float32 needs up to 9, float64 up to 17), so `exact_float_constants` rewrites, in the TIR, each
constant whose 7-digit decimal names another number (onnxruntime's QOperator model quantized 1 of 192 inputs
differently because of one such scale)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
import tvm
from onnx import TensorProto, helper, numpy_helper
from tvm import te, tirx

from c_checks import STRICT_WARNINGS
from tflite_builder import Model, Operator, Quantization, Tensor, build
from tvm_ext.codegen.codegen_c import generate_c
from tvm_ext.compile import compile
from tvm_ext.codegen.exact_float_constants import printed_exactly
from tvm_ext.layers import NUM_OUTPUTS_ATTR

TARGET = tvm.target.Target({"kind": "c"})
C_TYPES = {"float32": "float", "float64": "double"}
SCALE = np.float32(0.023811162)  # 7 digits print 2.381116e-02, another float32


def _random_floats(dtype: str, count: int) -> np.ndarray:
    """`count` finite floats of `dtype` from uniformly random bit patterns (every binade, subnormals, both
    signs), with the edge values of the type."""
    info = np.finfo(dtype)
    bits = np.random.default_rng(7).integers(0, 2 ** info.bits, size=4 * count, dtype=f"u{info.bits // 8}")
    values = bits.view(dtype)
    edges = np.array([info.max, -info.max, info.tiny, info.smallest_subnormal, 2.0 ** 40 + 2.0 ** 17,
                      0.5, 0.1, 0.0, -0.0, SCALE], dtype=dtype)
    return np.concatenate([edges, values[np.isfinite(values)][:count]])


def _constants_kernel(values: np.ndarray) -> tirx.PrimFunc:
    """A kernel that stores each of `values` as a constant: `output0[k] = <values[k]>;`."""
    def stores(_ins, outs):
        return tirx.SeqStmt([tirx.BufferStore(outs[0], tirx.FloatImm(str(values.dtype), float(v)), [k])
                             for k, v in enumerate(values)])
    out = te.extern((len(values),), [], stores, name="constants", dtype=str(values.dtype))
    return te.create_prim_func([out]).with_attr(NUM_OUTPUTS_ATTR, 1)


def _c_values(tmp_path: Path, values: np.ndarray, opt_level: str) -> np.ndarray:
    """What the generated C stores for `values`, compiled with gcc under the bundle's warning bar and
    -Wdouble-promotion at `opt_level` and run."""
    c_type = C_TYPES[str(values.dtype)]
    main = (f"#include <stdio.h>\nvoid k({c_type}* output0);\nstatic {c_type} out[{len(values)}];\n"
            "int main(void) { k(out); fwrite(out, sizeof out, 1, stdout); return 0; }\n")
    (tmp_path / "kernels.c").write_text(generate_c({"k": _constants_kernel(values)}, TARGET, "t").c_text)
    (tmp_path / "main.c").write_text(main)
    program = tmp_path / f"constants{opt_level}"
    subprocess.run(["gcc", "-std=c99", opt_level, "-Wall", "-Wextra", *STRICT_WARNINGS.split(), "-Wdouble-promotion",
                    str(tmp_path / "kernels.c"), str(tmp_path / "main.c"), "-lm", "-o", str(program)],
                   check=True, capture_output=True, text=True)
    return np.frombuffer(subprocess.run([str(program)], check=True, capture_output=True).stdout, values.dtype)


def _bits(values: np.ndarray) -> np.ndarray:
    return values.view(f"u{values.itemsize}")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("opt_level", ["-O0", "-O2"])
def test_every_constant_in_the_c_is_the_tirs_bit_for_bit(tmp_path, dtype, opt_level):
    """Random bit patterns: 7 digits would change most of them (the old C did)."""
    values = _random_floats(dtype, 1000)
    assert np.array_equal(_bits(_c_values(tmp_path, values, opt_level)), _bits(values))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("opt_level", ["-O0", "-O2"])
def test_non_finite_constants_are_c99_expressions_of_their_values(tmp_path, dtype, opt_level):
    """TVM prints them as `inff`, `-inff` and `nanf`, names C has not (an internal error: the bundle did not
    build); they are NaN and +-Inf in the C, NaN of either sign a quiet NaN."""
    values = np.array([np.inf, -np.inf, np.nan, -np.nan, 1.0], dtype)
    got = _c_values(tmp_path, values, opt_level)
    assert np.array_equal(got[:2], values[:2]) and np.isnan(got[2:4]).all() and got[4] == 1.0


def test_a_float32_constant_made_from_a_double_is_its_float32_value():
    """A float32 FloatImm keeps the double it was built from; the C holds that double rounded to float32."""
    double = 0.023811162  # not a float32
    kernel = te.extern((1,), [], lambda _i, outs: tirx.BufferStore(outs[0], tirx.FloatImm("float32", double), [0]),
                       name="c", dtype="float32")
    text = generate_c({"k": te.create_prim_func([kernel]).with_attr(NUM_OUTPUTS_ATTR, 1)}, TARGET, "t").c_text
    assert "ldexpf(((float)399485), -24)" in text and float(np.float32(double)) == 399485 * 2.0 ** -24


def test_constants_whose_7_digits_name_them_stay_readable_literals():
    values = np.array([0.5, 0.1, -3.0, 1e-3, 6.0], "float32")
    assert all(printed_exactly(float(v), v) for v in values) and not printed_exactly(float(SCALE), SCALE)
    text = generate_c({"k": _constants_kernel(values)}, TARGET, "t").c_text
    for literal in ("5.000000e-01f", "1.000000e-01f", "-3.000000e+00f", "1.000000e-03f", "6.000000e+00f"):
        assert literal in text
    assert "ldexp" not in text


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="needs arm-none-eabi-gcc")
@pytest.mark.parametrize("float_abi", [["-mcpu=cortex-m4", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"],
                                       ["-mcpu=cortex-m0plus", "-mfloat-abi=soft"]])
def test_ldexp_costs_nothing_on_cortex_m(tmp_path, float_abi):
    """At the profiles' -O2, GCC folds `ldexpf((float)M, E)` into the constant: no call of libm is left."""
    source = tmp_path / "kernels.c"
    values = _random_floats("float32", 50)
    source.write_text(generate_c({"k": _constants_kernel(values)}, TARGET, "t").c_text)
    assert source.read_text().count("ldexpf(") > 10  # most random floats are no integers
    subprocess.run(["arm-none-eabi-gcc", "-std=c99", "-mthumb", *float_abi, "-O2", "-Wall", "-Wextra",
                    *STRICT_WARNINGS.split(), "-c", str(source), "-o", str(tmp_path / "kernels.o")], check=True)
    undefined = subprocess.run(["arm-none-eabi-nm", "-u", str(tmp_path / "kernels.o")], check=True,
                               capture_output=True, text=True).stdout
    assert "ldexp" not in undefined


def test_an_onnx_scale_needing_9_digits_matches_onnxruntime_bit_for_bit(tmp_path):
    """`y = x * 0.023811162`: the bundle's output is onnxruntime's to the bit (the old C multiplied by
    2.381116e-02f and was off by up to 1.9e-9)."""
    node = helper.make_node("Mul", ["x", "scale"], ["y"], name="scale_x")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])],
                              [numpy_helper.from_array(np.array(SCALE), "scale")])
    path = tmp_path / "scale.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    bundle = compile(path, "lowpower", tmp_path / "out")
    assert bundle.selftest.passed and "onnxruntime" in bundle.selftest.output
    assert [report.bit_identical for report in bundle.selftest.outputs] == [True]


def test_tflite_quantize_and_dequantize_with_a_9_digit_scale_match_tflite_micro_bit_for_bit(tmp_path):
    """The float edges' kernels hold the scale as a float32 (QUANTIZE) and a float64 (DEQUANTIZE) constant; the
    old C's 7-digit scale made the float output differ from the reference's (TFLite Micro, a quantized model's)."""
    quantized = Quantization((float(SCALE),), (-3,))
    model = Model([Tensor("x", (1, 64), "float32"), Tensor("x_q", (1, 64), "int8", quantized),
                   Tensor("y", (1, 64), "float32")],
                  [Operator("QUANTIZE", (0,), (1,)), Operator("DEQUANTIZE", (1,), (2,))], inputs=(0,), outputs=(2,))
    path = tmp_path / "edges.tflite"
    path.write_bytes(build(model))
    bundle = compile(path, "lowpower", tmp_path / "out")
    assert bundle.selftest.passed and "TFLite Micro" in bundle.selftest.output
    assert [report.bit_identical for report in bundle.selftest.outputs] == [True]
