"""The reference runtime's child process imports the runtime and numpy, not the tvm_ext package: every compile
starts one, and the package (compiler API, packager, target) cost about a third of its CPU time for nothing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from test_reference_isolation import fake_package
from tvm_ext.reference import outputs as reference
from tvm_ext.frontend import TensorSpec

# A stand-in onnxruntime whose session refuses the model with a message saying what the child had imported.
REPORTING_ONNXRUNTIME = """
    import sys

    __version__ = "0"

    class SessionOptions:
        def add_session_config_entry(self, key, value):
            pass

    def InferenceSession(*args, **kwargs):
        raise RuntimeError("imported: " + " ".join(sorted(n for n in sys.modules if n.split(".")[0] == "tvm_ext")))
"""


def test_the_reference_child_does_not_import_tvm_ext(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(fake_package(tmp_path / "fake", "onnxruntime", REPORTING_ONNXRUNTIME)))
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["X"], ["Y"])], "g", [x], [y])
    path = tmp_path / "relu.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), path)
    with pytest.raises(reference.ReferenceRuntimeError) as raised:
        reference.run_reference(path, "onnx", [np.ones((1, 4), "float32")], [TensorSpec("X", (1, 4), "float32")], 1)
    assert str(raised.value).endswith("cannot run the model: imported:"), str(raised.value)
