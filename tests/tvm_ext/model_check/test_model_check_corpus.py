"""Every case of the fuzz corpus ends in a one-line ModelError naming the file, or passes; never another
exception, never a hang. Targeted cases must raise the kind of error they were built to provoke."""

from __future__ import annotations

from pathlib import Path

import fuzz_corpus
import pytest
from fuzz_corpus import BadModel, hang_guard

from tvm_ext.model_check import ErrorKind, ModelError, check_model

CASES = fuzz_corpus.all_cases()


def outcome(case: BadModel, directory: Path) -> ModelError | None:
    """Write the case and check it: the ModelError raised, or None when the model passed."""
    path = directory / case.file_name
    path.write_bytes(case.data)
    with hang_guard():
        try:
            check_model(path)
        except ModelError as error:
            return error
    return None


def assert_one_line_naming(error: ModelError, file_name: str) -> None:
    text = str(error)
    assert text.isprintable(), text
    assert text.startswith(f"{file_name}: "), text
    assert len(text) > len(file_name) + 2


@pytest.mark.parametrize("case", CASES, ids=[f"{c.file_name}:{c.case}" for c in CASES])
def test_case_ends_in_one_line_error_or_passes(case: BadModel, tmp_path: Path) -> None:
    error = outcome(case, tmp_path)
    if case.must_pass:
        assert error is None, str(error)
    if case.expected is not None:
        assert error is not None, f"{case.case}: passed the check"
        assert error.kind is case.expected, str(error)
    if error is not None:
        assert_one_line_naming(error, case.file_name)


def test_corpus_targets_every_kind_of_error() -> None:
    assert {case.expected for case in CASES if case.expected is not None} == set(ErrorKind)


def test_corpus_includes_every_shared_model() -> None:
    real = {case.file_name for case in CASES}
    assert {path.name for path in fuzz_corpus.shared_tflite_models()} <= real


@pytest.mark.parametrize("name", ["missing.tflite", "missing.onnx"])
def test_missing_file_is_a_file_error(name: str, tmp_path: Path) -> None:
    with pytest.raises(ModelError) as raised:
        check_model(tmp_path / name)
    assert raised.value.kind is ErrorKind.FILE
    assert_one_line_naming(raised.value, name)


def test_directory_is_a_file_error(tmp_path: Path) -> None:
    folder = tmp_path / "model.tflite"
    folder.mkdir()
    with pytest.raises(ModelError) as raised:
        check_model(folder)
    assert raised.value.kind is ErrorKind.FILE


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_endless_device_is_refused_without_reading() -> None:
    with hang_guard(), pytest.raises(ModelError) as raised:
        check_model("/dev/zero")
    assert raised.value.kind is ErrorKind.FILE
