"""The supported-operator tables against TVM 0.27's converters and the TFLite/ONNX operator names, and
the promise that the model check loads no TVM until it looks at operators."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import fuzz_corpus
import onnx.defs
import pytest

from tvm_ext.model_check import operator_support as support
from tvm_ext.model_check.tflite_versions import KNOWN_VERSIONS


def tflite_builtin_names() -> set[str]:
    from tflite.BuiltinOperator import BuiltinOperator

    return {name for name in vars(BuiltinOperator) if not name.startswith("_")}


def test_int8_set_is_converted_by_tvm() -> None:
    assert support.tvm_tflite_ops() >= support.TFLITE_INT8_OPS


def test_tflite_tables_name_real_builtins() -> None:
    builtins = tflite_builtin_names()
    assert set(support.TFLITE_EXCLUDED) <= builtins
    assert set(KNOWN_VERSIONS) <= builtins
    assert builtins >= support.TFLITE_INT8_OPS


def test_the_frontends_converter_tables_are_keyed_by_the_checks_lists() -> None:
    """The check's lists name the operators our import converts (no import of the frontend: no cycle); the
    frontend's tables follow them, in their order."""
    from tvm_ext.frontend.onnx_ops.integer_ops import CONVERTERS
    from tvm_ext.frontend.tflite_ops.signal import SIGNAL_CONVERTERS
    from tvm_ext.model_check.signal_ops import SIGNAL_OPERATORS

    assert list(CONVERTERS) == list(support.ONNX_OWN_CONVERTERS)
    assert list(SIGNAL_CONVERTERS) == list(SIGNAL_OPERATORS)


@pytest.mark.parametrize(("listed", "converters", "named"), [
    (("QLinearConv", "QGemm"), {"QLinearConv": 1}, "no converter for ['QGemm']"),
    (("QLinearConv",), {"QLinearConv": 1, "QGemm": 2}, "converters for ['QGemm']"),
])
def test_a_converter_table_that_differs_from_the_checks_list_is_refused(listed, converters, named) -> None:
    from tvm_ext.frontend.converter_table import ConverterTableError, keyed_by

    with pytest.raises(ConverterTableError, match=re.escape(named)):
        keyed_by(listed, converters, "the test's converters")


def test_onnx_exclusions_name_real_operators() -> None:
    for op in support.ONNX_EXCLUDED:
        assert onnx.defs.has(op) or op in support.tvm_onnx_ops(), op


@pytest.mark.parametrize(
    ("op", "quantized", "refused"),
    [
        ("SUB", False, False),  # float: anything TVM converts
        ("CUMSUM", True, True),  # int8: only our integer kernel set
        ("CONV_2D", True, False),
        ("WHILE", False, True),  # converted by TVM, excluded by our pipeline
        ("NOT_AN_OP", False, True),
    ],
)
def test_tflite_refusal(op: str, quantized: bool, refused: bool) -> None:
    assert (support.tflite_refusal(op, quantized) is not None) == refused


@pytest.mark.parametrize(
    ("domain", "op", "refused"),
    [
        ("", "Conv", False),
        ("ai.onnx", "Gemm", False),
        ("", "NonZero", True),
        ("com.vendor", "Conv", True),
        ("", "Gradient", True),
    ],
)
def test_onnx_refusal(domain: str, op: str, refused: bool) -> None:
    assert (support.onnx_refusal(domain, op) is not None) == refused


def test_checking_a_broken_model_imports_no_tvm(tmp_path) -> None:
    broken = tmp_path / "broken.tflite"
    broken.write_bytes(b"\x00" * 4 + b"TFL3" + b"\xff" * 8)
    script = textwrap.dedent(f"""
        import sys
        import tvm_ext.model_check as mc
        assert "tvm" not in sys.modules and "onnx" not in sys.modules
        try:
            mc.check_model({str(broken)!r})
        except mc.ModelError as error:
            print(error)
        assert "tvm" not in sys.modules
        """)
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, cwd=fuzz_corpus.REPO_ROOT
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("broken.tflite: ") and run.stdout.count("\n") == 1
