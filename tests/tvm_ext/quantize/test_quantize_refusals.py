"""`--quantize` refusals and decisions that need no bundle: one stderr line and exit 2 for quantizing without
calibration data, calibration data without quantizing, a calibration file that does not fit the model;
`--quantize auto`'s decision; TFLite's quantization rules of tvm_ext.quantize."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import models_dir, run_cli

HELLO_WORLD = "tflm/hello_world_float.tflite"


def _one_error_line(proc, *needles: str) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("tvm_ext.compile: error: hello_world_float.tflite: "), lines[0]
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def test_quantize_without_calibration_is_refused_in_one_line(tmp_path):
    proc = run_cli(str(models_dir() / HELLO_WORLD), "--quantize", "int8", "-o", str(tmp_path / "out"))
    _one_error_line(proc, "needs calibration data", "--calibration random")
    assert not (tmp_path / "out").exists()


def test_calibration_without_quantize_is_refused_in_one_line(tmp_path):
    data = tmp_path / "data.npz"
    np.savez(data, np.zeros((4, 1, 1), np.float32))
    proc = run_cli(str(models_dir() / HELLO_WORLD), "--calibration", str(data), "-o", str(tmp_path / "out"))
    _one_error_line(proc, "without --quantize")


def test_activations_without_quantize_is_refused_in_one_line(tmp_path):
    proc = run_cli(str(models_dir() / HELLO_WORLD), "--activations", "16x8", "-o", str(tmp_path / "out"))
    _one_error_line(proc, "--activations 16x8 given without --quantize")
    assert not (tmp_path / "out").exists()


def test_calibration_of_the_wrong_shape_names_the_input(tmp_path, cli_in_process):
    """In this process (`cli_in_process`): the refusal comes after the model's import, which a new process would
    import TVM for (2.2 CPU-s measured; the refusals above come before it, from the arguments alone)."""
    data = tmp_path / "data.npz"
    np.savez(data, np.zeros((4, 3), np.float32))
    proc = cli_in_process(str(models_dir() / HELLO_WORLD), "--quantize", "int8", "--calibration", str(data),
                          "-o", str(tmp_path / "out"))
    _one_error_line(proc, "data.npz", "serving_default_dense_input:0", "(N, 1, 1)")


def test_calibration_arrays_match_inputs_by_name_or_by_order(tmp_path):
    from tvm_ext.frontend import TensorSpec
    from tvm_ext.quantize import load_calibration

    specs = [TensorSpec("a", (1, 2), "float32"), TensorSpec("b", (3,), "float32")]
    by_name = tmp_path / "named.npz"
    np.savez(by_name, b=np.ones((5, 3)), a=np.zeros((5, 2)))  # leading 1 left out, keys in another order
    samples = load_calibration(by_name, specs).samples
    assert len(samples) == 5 and samples[0][0].shape == (1, 2) and samples[0][1].shape == (3,)
    assert samples[0][1].dtype == np.float32 and samples[0][1][0] == 1.0
    by_order = tmp_path / "ordered.npz"
    np.savez(by_order, np.zeros((2, 1, 2)), np.ones((2, 3)))
    assert load_calibration(by_order, specs).samples[1][1][2] == 1.0


def test_activation_quantization_follows_tflite():
    from tvm_ext.quantize import ActivationQuant

    quant = ActivationQuant.of_range(0.5, 2.0)  # widened to hold 0: [0, 2]
    assert quant.scale == np.float32(2.0 / 255) and quant.zero_point == -128
    symmetric = ActivationQuant.of_range(-1.0, 1.0)
    assert symmetric.zero_point in (-1, 0) and symmetric.quantize(np.array([0.0]))[0] == symmetric.zero_point
    assert ActivationQuant.of_range(0.0, 0.0).scale == np.float32(1.0)
    values = np.linspace(-1.0, 1.0, 101)
    assert np.max(np.abs(symmetric.dequantize(symmetric.quantize(values)) - values)) <= symmetric.scale / 2 + 1e-7


def test_per_channel_weights_are_symmetric_int8():
    from tvm_ext.quantize.qdq import _per_channel_int8

    weight = np.array([[[[0.5, -2.0]]], [[[0.0, 0.0]]], [[[1.27, -0.01]]]], np.float32)  # 3 channels on axis 0
    values, scales = _per_channel_int8(weight, 0)
    assert values.dtype == np.int8 and np.all(np.abs(values) <= 127)
    np.testing.assert_allclose(scales, [2.0 / 127, 1.0, 1.27 / 127], rtol=1e-6)
    assert values[0, 0, 0, 1] == -127 and values[2, 0, 0, 0] == 127 and values[2, 0, 0, 1] == -1


@pytest.mark.parametrize("profile_name, quantizes, reason", [
    ("lowpower", True, "has no FPU"),
    ("cortex-m4f", False, "keeping float"),
])
def test_auto_decides_from_the_fpu(profile_name, quantizes, reason):
    import target
    from tvm_ext.frontend import import_model
    from tvm_ext.quantize import decide

    path = models_dir() / HELLO_WORLD
    model = import_model(path)
    decision = decide(model.mod["main"], target.load_profile(profile_name))
    assert decision.quantize is quantizes and reason in decision.reason


def test_auto_quantizes_a_float_model_that_does_not_fit():
    import target
    from tvm_ext.frontend import import_model
    from tvm_ext.quantize import decide

    path = models_dir() / "mlperf_tiny/ad01_fp32.tflite"  # 1,063,456 B of float weights
    model = import_model(path)
    profile = target.load_profile("cortex-m4f")
    decision = decide(model.mod["main"], profile)
    assert decision.quantize, decision.reason
    assert f"float weights need 1,063,456 B of flash, cortex-m4f has {profile.flash_bytes:,} B" in decision.reason
