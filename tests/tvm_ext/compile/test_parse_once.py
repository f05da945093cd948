"""A compile parses its model file once: the check's parse is the object the import converts, and
`--quantize auto` (which checks and imports the float model before it decides) hands the same on.

Counted where the bytes become a model object: protobuf's ModelProto.ParseFromString for ONNX, the flatbuffer's
root table for TFLite (`tflite.Model.GetRootAs`), each only for the model file's own bytes (onnx's shape
inference parses its own output, which is not the file).
"""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
import tflite

from conftest import example_model, models_dir


@pytest.fixture
def file_parses(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The bytes of each parse of a model file in this process, appended as they happen."""
    parsed: list[bytes] = []
    parse_proto, root_table = onnx.ModelProto.ParseFromString, tflite.Model.GetRootAs.__func__

    def counting_parse(proto, data):
        parsed.append(bytes(data))
        return parse_proto(proto, data)

    def counting_root(cls, buf, offset=0):
        parsed.append(bytes(buf))
        return root_table(cls, buf, offset)

    monkeypatch.setattr(onnx.ModelProto, "ParseFromString", counting_parse)
    monkeypatch.setattr(tflite.Model, "GetRootAs", classmethod(counting_root))
    return parsed


def _compile_parses(path: Path, parsed: list[bytes], out: Path, **options) -> int:
    """How often compiling `path` (not built: the parse count does not depend on it) parsed the file."""
    from tvm_ext.compile import compile

    compile(path, "lowpower", out, build=False, **options)
    return parsed.count(path.read_bytes())


def test_a_tflite_compile_parses_its_file_once(file_parses: list[bytes], tmp_path: Path) -> None:
    path = models_dir() / "tflm" / "hello_world_int8.tflite"
    assert _compile_parses(path, file_parses, tmp_path / "out") == 1


def test_an_onnx_compile_parses_its_file_once(file_parses: list[bytes], tmp_path: Path) -> None:
    path = example_model(tmp_path)
    assert _compile_parses(path, file_parses, tmp_path / "out") == 1


def test_quantize_auto_keeping_float_parses_the_file_once(file_parses: list[bytes], tmp_path: Path) -> None:
    """auto on a profile with an FPU that the float model fits: checked and imported to decide, then compiled
    float from that same check."""
    from tvm_ext.compile import compile

    path = models_dir() / "tflm" / "hello_world_float.tflite"
    compile(path, "cortex-m4f", tmp_path / "out", build=False, quantize="auto", calibration="random")
    assert file_parses.count(path.read_bytes()) == 1


def test_a_compile_with_a_selftest_input_parses_its_file_once(file_parses: list[bytes], tmp_path: Path) -> None:
    """The check made to read the samples file for the model's inputs is the one the compile goes on with."""
    import numpy as np

    path = example_model(tmp_path)
    sample = tmp_path / "sample.npz"
    np.savez(sample, mfcc=np.zeros((1, 1, 1, 49, 10), np.float32))
    assert _compile_parses(path, file_parses, tmp_path / "out", selftest_input=sample) == 1
