"""A reference runtime that crashes, hangs or refuses a model costs one line and exit 2, never the compiler.

The runtimes run in a child process (tvm_ext.reference.runtimes); a crash is simulated with a stand-in
runtime package first on the child's PYTHONPATH that kills its own process.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import onnx
import pytest
from conftest import run_cli
from fuzz_corpus import TinyTflite, build_tflite, constant_input
from onnx import TensorProto, helper

from tvm_ext.reference import outputs as reference
from tvm_ext.frontend import TensorSpec


def fake_package(root: Path, module: str, body: str) -> Path:
    """A stand-in for the runtime `module` ("onnxruntime", "ai_edge_litert.interpreter") under `root`."""
    *packages, leaf = module.split(".")
    folder = root
    for package in packages:
        folder = folder / package
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "__init__.py").write_text("")
    target = folder / f"{leaf}.py"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(textwrap.dedent(body))
    return root


def assert_one_line_exit_2(proc, out: Path) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert len(lines) == 1, proc.stderr
    assert not list(out.parent.glob(f".{out.name}.*")), "staging folder left behind"
    assert not out.exists()
    return lines[0]


def test_tflite_input_with_constant_data_is_refused_in_one_line(tmp_path: Path) -> None:
    model = tmp_path / "constant_input.tflite"
    model.write_bytes(build_tflite(constant_input()))
    out = tmp_path / "out"
    line = assert_one_line_exit_2(run_cli(str(model), "-o", str(out)), out)
    assert line.startswith("tvm_ext.compile: error: constant_input.tflite: "), line
    assert "model input tensor 0 'input' has constant data" in line, line


ABORTING_LITERT = """
    import os

    class OpResolverType:
        BUILTIN_REF = 0

    def Interpreter(*args, **kwargs):
        os.abort()
"""

SEGFAULTING_ONNXRUNTIME = """
    import os
    import signal

    __version__ = "0"

    class SessionOptions:
        def add_session_config_entry(self, key, value):
            pass

    def InferenceSession(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGSEGV)
"""


@pytest.mark.parametrize(
    ("module", "body", "model", "message"),
    [
        ("onnxruntime", SEGFAULTING_ONNXRUNTIME, "--example",
         "the reference runtime onnxruntime crashed on the model (SIGSEGV)"),
        ("ai_edge_litert.interpreter", ABORTING_LITERT, "tiny.tflite",
         "the reference runtime LiteRT crashed on the model (SIGABRT)"),
    ],
    ids=["onnxruntime-segfault", "litert-abort"],
)
def test_crashing_runtime_is_one_line_exit_2(tmp_path: Path, monkeypatch, module, body, model, message) -> None:
    monkeypatch.setenv("PYTHONPATH", str(fake_package(tmp_path / "fake", module, body)))
    if model.endswith(".tflite"):
        (tmp_path / model).write_bytes(build_tflite(TinyTflite()))
        model = str(tmp_path / model)
    out = tmp_path / "out"
    line = assert_one_line_exit_2(run_cli(model, "-o", str(out)), out)
    assert line.startswith("tvm_ext.compile: error: "), line
    assert line.endswith(message), line


def test_hanging_runtime_is_stopped(tmp_path: Path, monkeypatch) -> None:
    sleeping = """
        import time

        class OpResolverType:
            BUILTIN_REF = 0

        def Interpreter(*args, **kwargs):
            time.sleep(120)
    """
    monkeypatch.setenv("PYTHONPATH", str(fake_package(tmp_path / "fake", "ai_edge_litert.interpreter", sleeping)))
    monkeypatch.setattr(reference, "REFERENCE_TIMEOUT_SECONDS", 3)
    model = tmp_path / "tiny.tflite"
    model.write_bytes(build_tflite(TinyTflite()))
    expected = r"^tiny.tflite: the reference runtime LiteRT did not finish within 3 s \(stopped\)$"
    with pytest.raises(reference.ReferenceRuntimeError, match=expected):
        reference.run_reference(model, "tflite", [np.zeros((1, 4), "float32")],
                                [TensorSpec("input", (1, 4), "float32")], 1)


def test_runtime_refusal_is_one_readable_line(tmp_path: Path) -> None:
    """onnxruntime's "[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : " status prefix is cut; the node is named."""
    x = helper.make_tensor_value_info("X", TensorProto.INT16, [1, 4])
    y = helper.make_tensor_value_info("Y", TensorProto.INT16, [1, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["X"], ["Y"], name="my_relu")], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    path = tmp_path / "relu16.onnx"
    onnx.save(model, path)
    with pytest.raises(reference.ReferenceRuntimeError) as raised:
        reference.run_reference(path, "onnx", [np.ones((1, 4), "int16")], [TensorSpec("X", (1, 4), "int16")], 1)
    text = str(raised.value)
    assert text.startswith("relu16.onnx: the reference runtime onnxruntime cannot run the model: "), text
    assert "'my_relu'" in text and "ONNXRuntimeError" not in text and "NOT_IMPLEMENTED" not in text, text
    assert "\n" not in text


def test_runtime_failure_drops_the_cpp_location_and_signature(tmp_path: Path) -> None:
    """A kernel failing at run time: onnxruntime's message carries a source path and a C++ signature."""
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 4])
    shape = helper.make_tensor_value_info("S", TensorProto.INT64, [2])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)
    graph = helper.make_graph([helper.make_node("Reshape", ["X", "S"], ["Y"], name="my_reshape")], "g", [x, shape], [y])
    path = tmp_path / "reshape.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), path)
    specs = [TensorSpec("X", (1, 4), "float32"), TensorSpec("S", (2,), "int64")]
    with pytest.raises(reference.ReferenceRuntimeError) as raised:
        reference.run_reference(path, "onnx", [np.ones((1, 4), "float32"), np.array([3, 3])], specs, 1)
    text = str(raised.value)
    assert "'my_reshape'" in text and "cannot be reshaped to the requested shape" in text, text
    assert "onnxruntime::" not in text and ".h:" not in text and "was false" not in text, text
