"""Mixed precision (issue 18): a layer whose quantization adds far more error than the measured budget stays
float on a profile with an FPU, recorded per layer in the manifest, and the model's error drops; a profile
without an FPU keeps every layer int8. The model: tests/quantize_models.py's dead-unit regressor, whose
second layer has an outlier weight that ruins its int8 per-channel scale."""

from __future__ import annotations

import json

import pytest

from quantize_models import write_dead_unit_regressor


pytestmark = pytest.mark.slow  # each quantizes or compiles a model: 20-60 s on the shared machine


@pytest.fixture(scope="module")
def regressor(tmp_path_factory):
    from tvm_ext.frontend import import_model

    path = write_dead_unit_regressor(tmp_path_factory.mktemp("dead_unit"))
    return import_model(path)


def _quantized(model, profile_name: str):
    import target
    from tvm_ext.quantize import load_calibration, quantize_model

    return quantize_model(model, load_calibration("random", model.inputs), target.load_profile(profile_name))


def test_the_layer_far_over_the_budget_stays_float_and_the_error_drops(regressor):
    mixed, all_int8 = _quantized(regressor, "cortex-m4f"), _quantized(regressor, "lowpower")
    assert [layer.precision for layer in mixed.layers] == ["int8", "float", "int8", "int8", "int8", "int8"]
    assert mixed.precision.startswith("mixed precision: 1 of 6 layers stay float (budget 8 x the median")
    assert mixed.facts["layer_errors"][1]["layer"] == "fc1 (FULLY_CONNECTED)"
    assert "fc1 (FULLY_CONNECTED) adds" in mixed.precision
    facts = mixed.facts["layer_errors"]
    assert facts[1]["precision"] == "float" and facts[1]["added_error"] > 0.1 and facts[0]["precision"] == "int8"
    assert mixed.facts["precision"] == mixed.precision
    assert mixed.facts["dtype"] == "int8 with float layers"
    # Measured (GPTQ weights, bias correction): 9.85 % -> 1.4 % on the calibration samples, 12.3 % -> 4.6 %
    # held back. The held-back bound was 0.25 x when all int8 gave 27.6 %: bias correction and GPTQ take part
    # of the coarse scale's error out of the int8 layer there, so the float layer's gain is smaller, not the
    # float layer's error larger (4.5 % then).
    assert mixed.accuracy["calibration"].value < 0.25 * all_int8.accuracy["calibration"].value
    assert mixed.accuracy["held_back"].value < 0.4 * all_int8.accuracy["held_back"].value


def test_a_profile_without_fpu_keeps_every_layer_int8(regressor):
    all_int8 = _quantized(regressor, "lowpower")
    assert all_int8.precision == "all layers int8: lowpower has no FPU"
    assert {layer.precision for layer in all_int8.layers} == {"int8"}
    assert all_int8.facts["dtype"] == "int8"
    # The outlier weight's cost stays: 13.0 % with round-to-nearest weights, 9.85 % with GPTQ's rounding,
    # which moves part of the coarse scale's error onto the channel's other weights (a smaller cost, not a
    # looser check of the int8 model).
    assert all_int8.accuracy["calibration"].value > 0.05


def test_a_well_quantizable_model_stays_all_int8_on_an_fpu():
    import target
    from conftest import models_dir
    from tvm_ext.frontend import import_model
    from tvm_ext.quantize import load_calibration, quantize_model

    path = models_dir() / "tflm/hello_world_float.tflite"
    model = import_model(path)
    quantized = quantize_model(model, load_calibration("random", model.inputs), target.load_profile("cortex-m4f"))
    assert quantized.precision.startswith("all layers int8: none adds more error than the budget"), quantized.precision


def test_the_float_layer_compiles_between_int8_kernels(tmp_path):
    import tvm_ext

    model = write_dead_unit_regressor(tmp_path)
    bundle = tvm_ext.compile(model, target="cortex-m4f", out=tmp_path / "out", quantize="int8",
                             calibration="random", jobs=1)
    assert bundle.selftest.passed
    manifest = json.loads((bundle.out_dir / "manifest.json").read_text())
    assert [layer["precision"] for layer in manifest["quantization"]["layer_errors"]][:2] == ["int8", "float"]
    source = "".join(path.read_text() for path in bundle.out_dir.glob("*.c"))
    assert "float" in source and "int8_t" in source
