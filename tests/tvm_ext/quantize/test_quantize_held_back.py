"""The accuracy cost on the user's held-back samples (`--held-back DATA.npz`): samples of the calibration's
distribution kept out of it, on which a classifier's top-1 agreement is judged with the float model's class
histogram beside it (issue 18's accuracy target is stated on 200 held-back inputs)."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import models_dir, run_cli
from quantize_models import CLASSES, INPUT_SHAPE, write_float_classifier


@pytest.mark.slow  # quantizes a model: 25-60 s on the shared machine
def test_held_back_samples_are_judged_and_recorded(tmp_path):
    import target
    from tvm_ext.frontend import import_model
    from tvm_ext.quantize import load_calibration, quantize_model

    path = write_float_classifier(tmp_path)
    model = import_model(path)
    rng = np.random.default_rng(11)
    np.savez(tmp_path / "calibration.npz", rng.normal(0.0, 0.5, (30, *INPUT_SHAPE[1:])).astype(np.float32))
    np.savez(tmp_path / "held.npz", rng.normal(0.0, 0.5, (25, *INPUT_SHAPE[1:])).astype(np.float32))
    quantized = quantize_model(model, load_calibration(tmp_path / "calibration.npz", model.inputs),
                               target.load_profile("lowpower"),
                               held_back=load_calibration(tmp_path / "held.npz", model.inputs))
    assert quantized.facts["held_back"] == "held.npz"
    held_back = quantized.facts["accuracy"]["held_back"]
    assert held_back["metric"] == "top1_agreement" and held_back["samples"] == 25
    counts = held_back["float_class_counts"]
    assert len(counts) == CLASSES and sum(counts) == 25
    assert held_back["float_classes"] == sum(1 for count in counts if count)


def test_held_back_data_without_quantize_is_refused_in_one_line(tmp_path):
    data = tmp_path / "held.npz"
    np.savez(data, np.zeros((4, 1, 1), np.float32))
    proc = run_cli(str(models_dir() / "tflm/hello_world_float.tflite"), "--held-back", str(data),
                   "-o", str(tmp_path / "out"))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "held-back data given without --quantize" in lines[0], lines[0]
    assert not (tmp_path / "out").exists()


def test_random_held_back_samples_are_refused_in_one_line(tmp_path):
    """'random' would draw the calibration's own noise samples again: nothing held back would be judged."""
    proc = run_cli(str(models_dir() / "tflm/hello_world_float.tflite"), "--quantize", "int8", "--calibration",
                   "random", "--held-back", "random", "-o", str(tmp_path / "out"))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "--held-back takes an .npz" in lines[0], lines[0]
    assert not (tmp_path / "out").exists()
