"""The command line: stage lines and summary on success; one line and exit code 2 on a refused model."""

from __future__ import annotations

import subprocess

from conftest import example_model, run_cli, writable_copy


def test_example_compiles_builds_and_passes(tmp_path):
    out = tmp_path / "example"
    proc = run_cli("--example", "--target", "lowpower", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    for stage in ("import", "passes", "codegen", "planning", "packaging", "build", "self-test"):
        assert f"[tvm_ext] {stage}" in proc.stdout
    summary = proc.stdout.strip().splitlines()[-1]
    assert "arena" in summary and "weights" in summary and "kernels" in summary and "self-test PASS" in summary
    assert (out / "libexample_kws_cnn.a").is_file()


def test_cmake_builds_and_ctest_passes(compiled, tmp_path):
    out = writable_copy(compiled(example_model), tmp_path).out_dir
    build = tmp_path / "cmake-build"
    subprocess.run(["cmake", "-S", str(out), "-B", str(build)], check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(build)], check=True, capture_output=True)
    ctest = subprocess.run(["ctest", "--output-on-failure"], cwd=build, capture_output=True, text=True)
    assert ctest.returncode == 0, ctest.stdout


def test_hybrid_model_is_refused_in_one_line(shared_models, tmp_path):
    out = tmp_path / "hybrid"
    proc = run_cli(str(shared_models / "mlperf_tiny/kws_ref_model_float32.tflite"), "-o", str(out))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("tvm_ext.compile: error: kws_ref_model_float32.tflite: ")
    assert "CONV_2D" in lines[0]
    assert not out.exists()
    assert not any(p.name.startswith(".hybrid") for p in tmp_path.iterdir())


def test_model_over_the_profile_sram_is_refused(shared_models, tmp_path):
    out = tmp_path / "vww"
    proc = run_cli(str(shared_models / "mlperf_tiny/vww_96_float.tflite"), "--target", "cortex-m0plus", "-o", str(out))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert "vww_96_float" in proc.stderr and "SRAM" in proc.stderr and "B over" in proc.stderr
    assert not out.exists()
