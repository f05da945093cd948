"""`--validate SAMPLES.npz`: the user's samples through the built bundle on the host against the reference runtime
(and, for a `--quantize` bundle, the float model): per output errors, top-1 agreement, accuracy against labels
and a confusion matrix; a hostile samples file gets one line and exit 2 before any compile work."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from conftest import example_model
from tvm_ext.validate.metrics import compare

INPUT_SHAPE = (1, 1, 49, 10)  # the built-in example's input (mfcc), 12 classes out


def _samples(path: Path, count: int = 12, labels: np.ndarray | None = None, **extra) -> Path:
    rng = np.random.default_rng(7)
    arrays = {"mfcc": rng.uniform(-1, 1, (count, *INPUT_SHAPE)).astype(np.float32), **extra}
    if labels is not None:
        arrays["labels"] = labels
    np.savez(path, **arrays)
    return path


def test_metrics_of_a_known_difference() -> None:
    ours = [np.array([[0.0, 1.0, 0.0]]), np.array([[2.0, 0.0, 0.0]])]
    theirs = [np.array([[0.0, 1.0, 0.5]]), np.array([[0.0, 0.0, 1.0]])]
    result = compare(0, "ref", ours, theirs, np.array([1, 2]))
    assert result.max_abs_error == 2.0
    assert result.rmse == pytest.approx(np.sqrt((0.25 + 4 + 1) / 6))
    assert result.cosine == pytest.approx(1.0 / (np.sqrt(5) * np.sqrt(2.25)))
    assert result.top1_agreement == 0.5  # sample 0 agrees (class 1), sample 1 does not (0 vs 2)
    assert result.accuracy == 0.5 and result.reference_accuracy == 1.0
    assert result.confusion.tolist() == [[0, 0, 0], [0, 1, 0], [1, 0, 0]]


@pytest.mark.parametrize(("what", "extra", "message"), [
    ("pickled objects", {"labels": np.array([{"a": 1}] * 12, dtype=object)}, "holds Python objects"),
    ("float labels", {"labels": np.linspace(0, 1, 12)}, "'labels' must hold 12 whole numbers"),
    ("labels of another count", {"labels": np.arange(5)}, "'labels' must hold 12 whole numbers"),
])
def test_a_hostile_samples_file_gets_one_line_and_exit_2_before_compiling(tmp_path, what, extra, message,
                                                                          cli_in_process) -> None:
    samples = _samples(tmp_path / "samples.npz", **extra)
    proc = cli_in_process("--example", "--target", "lowpower", "-o", str(tmp_path / "out"), "--validate", str(samples))
    assert proc.returncode == 2, (what, proc.stderr)
    assert proc.stderr.count("\n") == 1 and message in proc.stderr and "samples file samples.npz" in proc.stderr
    assert "[tvm_ext] import" not in proc.stdout and not (tmp_path / "out").exists()


def test_validate_a_float_bundle_against_onnxruntime_with_labels(tmp_path, cli_in_process) -> None:
    labels = np.arange(12) % 12
    samples = _samples(tmp_path / "samples.npz", labels=labels)
    proc = cli_in_process("--example", "--target", "lowpower", "-o", str(tmp_path / "out"), "--validate", str(samples))
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^\[tvm_ext\] validate +[0-9.]+ s  CPU .* 12 samples of samples.npz on the host",
                     proc.stdout, re.MULTILINE), proc.stdout
    (line,) = [line for line in proc.stdout.splitlines() if "output 0 on the host against onnxruntime" in line]
    error = float(re.search(r"max abs error ([0-9.e+-]+)", line).group(1))
    assert error < 1e-5 and "cosine 1.000000" in line and "top-1 agreement 100.0%" in line, line
    assert "accuracy against the labels" in line
    matrix = [line.split()[2:] for line in proc.stdout.splitlines()
              if re.match(r"\[tvm_ext\] validate +(\d+ +){11}\d+$", line)]
    assert len(matrix) == 12 and sum(int(cell) for row in matrix for cell in row) == 12


@pytest.mark.slow
def test_validate_a_quantized_bundle_against_the_float_model(tmp_path, cli_in_process) -> None:
    samples = _samples(tmp_path / "samples.npz", count=30)
    proc = cli_in_process("--example", "--target", "lowpower", "-o", str(tmp_path / "out"), "--quantize", "int8",
                          "--calibration", "random", "--validate", str(samples), "--selftest-input", str(samples))
    assert proc.returncode == 0, proc.stderr
    assert "PASS on host" in proc.stdout  # the user's float sample, quantized with the bundle's input scale
    (line,) = [line for line in proc.stdout.splitlines() if "output 0 on the host against onnxruntime" in line]
    assert "(the float model)" in line, line
    cosine = float(re.search(r"cosine ([0-9.]+)", line).group(1))
    error = float(re.search(r"max abs error ([0-9.e+-]+)", line).group(1))
    assert 0.9 < cosine <= 1.0 and 0 < error < 0.5, line  # dequantized probabilities near the float model's


def test_selftest_input_embeds_the_users_first_sample_instead_of_noise(tmp_path) -> None:
    import tvm_ext

    sample = np.full((2, *INPUT_SHAPE), 0.3125, np.float32)
    sample[0, 0, 0, 0, :3] = [0.5, -0.75, 0.125]
    np.savez(tmp_path / "sample.npz", mfcc=sample)
    out = tmp_path / "out"
    bundle = tvm_ext.compile(example_model(tmp_path), out=out, selftest_input=tmp_path / "sample.npz", jobs=1)
    assert bundle.selftest.passed
    first_case = (out / "selftest.c").read_text().split("selftest_input0[", 1)[1].split("{", 2)[2]
    assert first_case.lstrip().startswith("0x1p-1f, -0x1.8p-1f, 0x1p-3f, 0x1.4p-2f,"), first_case[:200]


def test_a_hostile_selftest_input_gets_one_line_and_exit_2(tmp_path, cli_in_process) -> None:
    np.savez(tmp_path / "sample.npz", mfcc=np.array([object()] * 3, dtype=object))
    proc = cli_in_process("--example", "-o", str(tmp_path / "out"), "--selftest-input", str(tmp_path / "sample.npz"))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "holds Python objects" in proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize(("profile", "board"), [("cortex-m4f", "mps2-an386"), ("rv32imafc", "virt")])
def test_validate_on_the_emulated_core_of_a_device_profile(tmp_path, profile: str, board: str, cli_in_process) -> None:
    """The samples run on the profile's emulated board (QEMU's mps2-an386; RISC-V virt, by the same runner as
    the self-test) as well as on the host (embedded in a driver that takes the place of the self-test, in a
    copy of the bundle), each compared with onnxruntime."""
    samples = _samples(tmp_path / "samples.npz", count=5, labels=np.arange(5))
    proc = cli_in_process("--example", "--target", profile, "-o", str(tmp_path / "out"), "--validate", str(samples))
    assert proc.returncode == 0, proc.stderr
    (line,) = [line for line in proc.stdout.splitlines()
               if f"output 0 on {board} (emulated {profile}, the first 5 samples) against onnxruntime" in line]
    error = float(re.search(r"max abs error ([0-9.e+-]+)", line).group(1))
    assert error < 1e-5 and "top-1 agreement 100.0%" in line, line
    assert "print_bytes" not in (tmp_path / "out" / "selftest.c").read_text()  # the driver only in the copy


def test_the_host_run_builds_with_the_profiles_portable_flags_not_fixed_ones() -> None:
    """--validate's host build of a hifi4 bundle (xt-clang, -O3, -DHIFI4) compiled it with a fixed
    `-std=c99 -O2`: another optimisation level and without the profile's defines, so not the code the bundle
    ships. Now it takes the profile's host-portable flags (the core's -m and --xtensa options dropped)."""
    import target
    from tvm_ext.compile.pipeline import build_config
    from tvm_ext.validate.host_run import host_make_variables

    variables = host_make_variables(build_config(target.resolve_profile("hifi4")))
    assert variables["CC"] == ("cc",) and variables["LDFLAGS"] == ()
    assert variables["CFLAGS"] == ("-std=c99", "-DHIFI4", "-O3", "-ffunction-sections", "-fdata-sections")
