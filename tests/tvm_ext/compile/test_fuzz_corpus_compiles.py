"""Past the model check, the rest of the compiler holds too: every corpus case on the small models that
passes the check either becomes a bundle whose self-test passes against the reference runtime, or is
refused with a one-line CompileError naming the model, printable whatever the model's names hold; never any
other exception."""

from __future__ import annotations

import tempfile
from pathlib import Path

import fuzz_corpus
import pytest
from fuzz_corpus import BadModel

from tvm_ext.compile import CompileError, compile
from tvm_ext.model_check import ModelError, check_model

SMALL_MODELS = {"tiny.tflite", "small.onnx", "hello_world_float.tflite", "hello_world_int8.tflite"}


def passes_the_check(case: BadModel) -> bool:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / case.file_name
        path.write_bytes(case.data)
        try:
            check_model(path)
        except ModelError:
            return False
    return True


CASES = [case for case in fuzz_corpus.all_cases() if case.file_name in SMALL_MODELS and passes_the_check(case)]


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[f"{c.file_name}:{c.case}" for c in CASES])
def test_checked_case_compiles_or_is_refused_in_one_line(case: BadModel, tmp_path: Path) -> None:
    model = tmp_path / case.file_name
    model.write_bytes(case.data)
    out = tmp_path / "out"
    try:
        bundle = compile(model, "lowpower", out)
    except CompileError as error:
        text = str(error)
        assert text.isprintable() and text.startswith(f"{case.file_name}: "), text
        assert not out.exists()
        assert not case.must_pass, f"a valid model was refused: {text}"
        return
    assert bundle.selftest.passed, bundle.selftest.output
