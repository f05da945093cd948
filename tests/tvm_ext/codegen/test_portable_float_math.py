"""A bundle's float kernels call the bundle's own expf, logf, tanhf and erff (packager/templates/float_math_*.h.in,
through tvm_ext.codegen.libm_lowering.PORTABLE_FUNCTIONS), never the C library's, which round differently on the
host and on the boards; an int8 bundle defines none of them; our kernels built as C outside a bundle keep libm's."""

from __future__ import annotations

import re
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from tvm_ext.compile import compile

LIBRARY_CALL = re.compile(r"(?<![\w])(expf|logf|tanhf|erff)\s*\(")


def _exp_log_sigmoid_model(path: Path) -> Path:
    """y = Log(Exp(x) + Sigmoid(x)) + Tanh(x) + Erf(x): an exp, a log, a sigmoid (TVM's 1 / (1 + exp(-x))), a tanh
    and an erf."""
    nodes = [helper.make_node("Exp", ["x"], ["e"]), helper.make_node("Sigmoid", ["x"], ["s"]),
             helper.make_node("Add", ["e", "s"], ["t"]), helper.make_node("Log", ["t"], ["l"]),
             helper.make_node("Tanh", ["x"], ["h"]), helper.make_node("Add", ["l", "h"], ["lh"]),
             helper.make_node("Erf", ["x"], ["r"]), helper.make_node("Add", ["lh", "r"], ["y"])]
    graph = helper.make_graph(nodes, path.stem, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), str(path))
    return path


def test_a_float_bundle_calls_its_own_expf_logf_tanhf_and_erff(tmp_path):
    bundle = compile(_exp_log_sigmoid_model(tmp_path / "explog.onnx"), "lowpower", tmp_path / "out")
    assert bundle.selftest.passed
    kernels = (bundle.out_dir / "explog_kernels.c").read_text()
    internal = (bundle.out_dir / "explog_internal.h").read_text()
    assert "explog_expf(" in kernels and "explog_logf(" in kernels and "explog_tanhf(" in kernels
    assert "explog_erff(" in kernels
    assert not LIBRARY_CALL.search(kernels)
    assert "static EXPLOG_FLOAT_MATH_EXACT float explog_expf(float x)" in internal
    assert "static EXPLOG_FLOAT_MATH_EXACT float explog_logf(float x)" in internal
    assert "static EXPLOG_FLOAT_MATH_EXACT float explog_tanhf(float x)" in internal
    assert "static EXPLOG_FLOAT_MATH_EXACT float explog_erff(float x)" in internal


def test_our_kernels_outside_a_bundle_keep_the_c_librarys_functions():
    """tvm.tirx.build with our pipeline (a user's C build: no bundle helper is defined there)."""
    import tvm
    from tvm import te, tirx

    from tvm_ext.codegen.codegen_c import PIPELINE_NAME

    a = te.placeholder((4,), "float32", name="a")
    b = te.compute((4,), lambda i: tirx.erf(tirx.tanh(tirx.log(tirx.exp(a[i])))), name="b")
    module = tvm.IRModule({"k": te.create_prim_func([a, b]).with_attr("global_symbol", "k")})
    source = tvm.tirx.build(module, target="c", pipeline=PIPELINE_NAME).inspect_source()
    assert "erff(tanhf(logf(expf(" in source


@pytest.mark.parametrize(("exponent", "expected"), [(2.0, "(arg0[i] * arg0[i]);"), (1.0, "arg0[i];"),
                                                    (-1.0, "(1.000000e+00f / arg0[i]);"), (0.0, "1.000000e+00f;"),
                                                    (3.0, "powf(arg0[i], 3.000000e+00f);")])
def test_a_power_by_a_constant_0_1_2_or_minus_1_is_one_ieee_operation(exponent, expected):
    """pow(x, 2) as x * x (glibc's powf(x, 2), which a -O0 build calls, rounds some squares apart from it), 1 / x,
    x, 1; any other exponent the C library's powf."""
    import tvm
    from tvm import te, tirx

    from tvm_ext.codegen.codegen_c import PIPELINE_NAME

    a = te.placeholder((4,), "float32", name="a")
    b = te.compute((4,), lambda i: tirx.pow(a[i], tirx.const(exponent, "float32")), name="b")
    module = tvm.IRModule({"k": te.create_prim_func([a, b]).with_attr("global_symbol", "k")})
    source = tvm.tirx.build(module, target="c", pipeline=PIPELINE_NAME).inspect_source()
    assert f"arg1[i] = {expected}" in source and (exponent == 3.0) == ("powf(" in source), source
