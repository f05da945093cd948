"""What the quantizer measures and refuses (issue 18's "Measured" section): the held-back accuracy is taken
on 200 samples of the calibration's own distribution, and a quantized model that still overflows the
profile's SRAM is refused in one line with the byte counts. Small models only (hello_world_float)."""

from __future__ import annotations

import pytest

from conftest import models_dir

HELLO_WORLD = "tflm/hello_world_float.tflite"


@pytest.fixture(scope="module")
def hello_world_quantized():
    """hello_world_float quantized for lowpower on random calibration (tvm_ext.quantize, no bundle)."""
    import target
    from tvm_ext.frontend import import_model
    from tvm_ext.quantize import load_calibration, quantize_model

    path = models_dir() / HELLO_WORLD
    model = import_model(path)
    return quantize_model(model, load_calibration("random", model.inputs), target.load_profile("lowpower"))


def test_held_back_accuracy_is_measured_on_200_samples_of_the_calibration_distribution(hello_world_quantized):
    held_back = hello_world_quantized.accuracy["held_back"]
    assert held_back.samples == 200  # the figure
    facts = hello_world_quantized.facts
    assert facts["accuracy"]["held_back"]["samples"] == 200
    assert facts["calibration"].startswith("random: uniform [-1, 1), 100 samples, seed 1")
    assert facts["held_back"] == "random: uniform [-1, 1), 200 samples, seed 2"


def test_a_quantized_model_over_the_sram_is_refused_with_the_byte_count(tmp_path, cli_in_process):
    # hello_world_float quantized has a 32 B arena (measured) and an int8 input and output; a cortex-m0plus with
    # 16 B of SRAM cannot hold them: refused before the build, whose stack would come on top.
    board = tmp_path / "tiny.toml"
    board.write_text('extends = "cortex-m0plus"\nname = "tiny-m0plus"\nsram_bytes = 16\n')
    out = tmp_path / "out"
    proc = cli_in_process(str(models_dir() / HELLO_WORLD), "--target", str(board), "--quantize", "int8",
                          "--calibration", "random", "-o", str(out))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert lines[0].startswith("tvm_ext.compile: error: hello_world_float"), lines[0]
    assert ("RAM needs 34 B of SRAM (arena 32 B + inputs 1 B + outputs 1 B + state 0 B; stack not yet counted: "
            "measured after the build) but tiny-m0plus has 16 B (18 B over)") in lines[0]
    assert not out.exists()


def test_each_layer_records_its_quantization_error_on_the_calibration_data(hello_world_quantized):
    layers = hello_world_quantized.layers
    facts = hello_world_quantized.facts["layer_errors"]
    assert [error.facts() for error in layers] == facts
    assert len(layers) == 3  # hello_world_float: three FULLY_CONNECTED layers
    assert all("FULLY_CONNECTED" in error.layer for error in layers), layers
    assert all(0.0 < error.relative_error < 0.05 for error in layers), layers  # int8 near, not equal to, float
    # The last layer's output is the model's output: its error is the model's cost on the same samples, up to the
    # integer kernels' requantization rounding, which the QDQ graph the layer errors are measured on leaves out.
    model_cost = hello_world_quantized.accuracy["calibration"].value
    assert abs(layers[-1].relative_error - model_cost) < 0.25 * model_cost, (layers[-1], model_cost)


def test_top1_agreement_says_how_many_classes_the_float_model_predicts():
    import numpy as np

    from tvm_ext.quantize.accuracy import Metric, accuracy_cost

    float_outputs = [np.array([0.9, 0.1]), np.array([0.2, 0.8]), np.array([0.3, 0.7])]
    int8_outputs = [np.array([0.8, 0.2]), np.array([0.3, 0.7]), np.array([0.6, 0.4])]
    cost = accuracy_cost(Metric.TOP1_AGREEMENT, float_outputs, int8_outputs)
    assert cost.value == pytest.approx(2 / 3) and cost.float_classes == 2
    assert cost.facts()["float_classes"] == 2 and "(float predicts 2 classes)" in cost.describe()
    # Noise inputs that all land in one class make 100% agreement say nothing: the count shows it.
    one_class = accuracy_cost(Metric.TOP1_AGREEMENT, float_outputs[:1] * 4, int8_outputs[:1] * 4)
    assert (one_class.value, one_class.float_classes) == (1.0, 1)
    assert "float_classes" not in accuracy_cost(Metric.RELATIVE_ERROR, float_outputs, int8_outputs).facts()


def test_ranges_default_to_percentiles_weights_are_gptq_rounded_and_biases_corrected(hello_world_quantized):
    import inspect

    import tvm_ext
    from tvm_ext.compile.__main__ import _parser

    facts = hello_world_quantized.facts
    assert facts["ranges"] == "percentile"
    assert facts["weight_rounding"].startswith("GPTQ: each conv/dense weight's int8 values"), facts
    assert facts["bias_correction"].startswith("empirical: each int8 MAC's bias less the mean error"), facts
    assert facts["activations"] == "per-tensor asymmetric int8", facts  # int8's default ranges: percentile
    assert inspect.signature(tvm_ext.compile).parameters["ranges"].default is None  # by activation type
    assert _parser("tvm-ext-compile").parse_args(["model.tflite"]).ranges is None
