"""Every way a compilation can fail, through the command line: exit code 2 and exactly one line
`tvm_ext.compile: error: <model>: ...` on stderr (no traceback), no OUT folder afterwards and no staging
folder left beside it; an existing OUT is left as it was. Internal errors exit with 3 and ask for --debug."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import fuzz_corpus
import pytest

from conftest import run_cli
from tvm_ext.compile import __main__ as cli
from tvm_ext.model_check import ErrorKind

ERROR_PREFIX = "tvm_ext.compile: error: "


def first_case_of_each_kind() -> dict[ErrorKind, fuzz_corpus.BadModel]:
    representatives: dict[ErrorKind, fuzz_corpus.BadModel] = {}
    for case in fuzz_corpus.all_cases():
        if case.expected is not None:
            representatives.setdefault(case.expected, case)
    return representatives


REPRESENTATIVES = first_case_of_each_kind()


def assert_refused_in_one_line(proc: subprocess.CompletedProcess, model_name: str, out: Path) -> str:
    """The refusal's contract; returns the line."""
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"{ERROR_PREFIX}{model_name}: "), lines[0]
    assert "Traceback" not in proc.stdout
    assert not out.exists()
    assert not list(out.parent.glob(f".{out.name}.*")), "a staging folder was left behind"
    return lines[0]


@pytest.mark.parametrize("kind", list(ErrorKind), ids=lambda kind: kind.value)
def test_bad_model_is_refused_in_one_line_and_leaves_no_output(kind, tmp_path):
    case = REPRESENTATIVES[kind]
    model = tmp_path / case.file_name
    model.write_bytes(case.data)
    out = tmp_path / "out"
    assert_refused_in_one_line(run_cli(str(model), "-o", str(out)), case.file_name, out)


def test_operator_tvm_cannot_convert_is_named_in_one_line(tmp_path):
    """TFLite reads a FULLY_CONNECTED without options as the defaults; TVM's converter asserts on it. The line
    names the layer, and TVM's C++ warning about the builder it abandoned stays off stderr."""
    model = tmp_path / "no_options.tflite"
    spec = replace(fuzz_corpus.TinyTflite(), operators=[fuzz_corpus.TinyOperator(0, (0, 1, 2), (3,))])
    model.write_bytes(fuzz_corpus.build_tflite(spec))
    out = tmp_path / "out"
    line = assert_refused_in_one_line(run_cli(str(model), "-o", str(out)), model.name, out)
    assert "layer dense/output (FULLY_CONNECTED): TVM cannot import it" in line


def test_unknown_profile_is_refused_in_one_line(shared_models, tmp_path):
    out = tmp_path / "out"
    proc = run_cli(str(shared_models / "tflm/hello_world_float.tflite"), "--target", "cortex-z9", "-o", str(out))
    line = assert_refused_in_one_line(proc, "hello_world_float.tflite", out)
    assert "cortex-z9" in line


def test_missing_compiler_after_packaging_leaves_no_output(shared_models, tmp_path):
    """hifi4's xt-clang is not on this machine: the bundle is written, then refused before it is built."""
    out = tmp_path / "out"
    proc = run_cli(str(shared_models / "tflm/hello_world_float.tflite"), "--target", "hifi4", "-o", str(out))
    line = assert_refused_in_one_line(proc, "hello_world_float.tflite", out)
    assert "xt-clang" in line


def test_non_empty_out_is_refused_and_kept(shared_models, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    proc = run_cli(str(shared_models / "tflm/hello_world_float.tflite"), "-o", str(out))
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert "--force" in proc.stderr
    assert [p.name for p in out.iterdir()] == ["mine.txt"]


def test_failed_forced_compile_keeps_the_old_out(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    case = REPRESENTATIVES[ErrorKind.GRAPH]
    model = tmp_path / case.file_name
    model.write_bytes(case.data)
    proc = run_cli(str(model), "-o", str(out), "--force")
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert (out / "mine.txt").read_text() == "keep me"
    assert not list(tmp_path.glob(".out.*"))


def raise_internal_error(*args, **kwargs):
    raise KeyError("an invariant broke\nsecond line")


def test_internal_error_exits_3_in_one_line_asking_for_debug(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(cli, "compile", raise_internal_error)
    assert cli.main(["model.tflite", "-o", str(tmp_path / "out")]) == 3
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    assert err.startswith("tvm_ext.compile: internal error: KeyError") and "--debug" in err


def test_debug_shows_the_traceback(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(cli, "compile", raise_internal_error)
    assert cli.main(["model.tflite", "-o", str(tmp_path / "out"), "--debug"]) == 3
    assert "Traceback" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [[], ["--bogus"], ["m.onnx", "--jobs", "0"], ["m.onnx", "--layout", "diagonal"],
                                  ["m.onnx", "--target"]], ids=lambda argv: " ".join(argv) or "no arguments")
def test_a_usage_error_is_one_line_and_exit_2(argv, capsys):
    """argparse printed its usage (ten lines) before its own error line."""
    with pytest.raises(SystemExit) as ended:
        cli.main(argv)
    lines = capsys.readouterr().err.splitlines()
    assert ended.value.code == 2
    assert len(lines) == 1 and lines[0].startswith(ERROR_PREFIX), lines
    assert lines[0].endswith("(--help lists the options)"), lines
