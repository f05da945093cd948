"""TFLite Micro's own example models (person_detect, micro_speech_quantized, simple_add_model) compile for
the host and the emulated Cortex-M4F and match TFLite Micro exactly, and each bug they hit has its test:

- person_detect's biases are 1-D tensors with per-channel scales on `quantized_dimension = 3`: the model
  check refused them, then `relax.dequantize` did (axis out of range); TFLite Micro runs them.
- micro_speech's FULLY_CONNECTED takes a 4-D input, which TFLite flattens to rows (keep_num_dims false).
- simple_add_model's tensors outgrow TFLite Micro's default arena (10x the file), and it needs no arena of
  its own, whose placeholder the compiler drops from the ELF.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from tflite_micro import runtime

from test_e2e_int8_models import io_arrays, shared_library
from tflite_models import SAME, DepthwiseCase, depthwise_model, fully_connected_model
from tvm_ext.compile import compile
from tvm_ext.frontend import import_model
from tvm_ext.model_check import check_model
from tvm_ext.reference import outputs as reference

RUNS = 5


@pytest.fixture
def depthwise_file(tmp_path):
    """A DEPTHWISE_CONV_2D (3 channels, multiplier 2) whose bias is quantized on dimension 3."""
    path = tmp_path / "dw.tflite"
    path.write_bytes(depthwise_model(3, 2, [DepthwiseCase(1, SAME)]))
    return path


def test_model_check_accepts_a_1d_bias_quantized_on_dimension_3(depthwise_file, shared_models):
    check_model(depthwise_file)
    check_model(shared_models / "tflm/person_detect.tflite")


def test_frontend_imports_a_1d_bias_quantized_on_dimension_3(depthwise_file):
    assert import_model(depthwise_file).outputs[0].shape == (1, 9, 9, 6)


@pytest.mark.parametrize("keep_num_dims", [False, True])
def test_fully_connected_on_a_4d_input_matches_tflite_micro(tmp_path, keep_num_dims):
    model = tmp_path / f"fc_keep{int(keep_num_dims)}.tflite"
    model.write_bytes(fully_connected_model((1, 2, 3, 4), 5, keep_num_dims))
    bundle = compile(model, "lowpower", tmp_path / "out")
    assert bundle.selftest.passed and bundle.selftest.max_errors == (0,), bundle.selftest.output
    expected_shape = (1, 2, 3, 5) if keep_num_dims else (1, 5)
    assert bundle.plan.tensors[bundle.plan.outputs[0]].shape == expected_shape


def test_tflite_micro_reference_runs_a_model_larger_than_its_default_arena(shared_models):
    path = shared_models / "tflm/simple_add_model.tflite"
    imported = import_model(path)
    inputs = reference.test_inputs(imported.inputs)  # the name is the compiler's, not a test
    outputs, runtime_name = reference.run_reference(path, "tflite", inputs, imported.inputs, len(imported.outputs))
    assert runtime_name.startswith("TFLite Micro")
    assert outputs[0].shape == imported.outputs[0].shape


@pytest.mark.parametrize("device", ["lowpower", "cortex-m4f"])
@pytest.mark.parametrize("model", ["micro_speech_quantized", "simple_add_model"])
def test_example_model_matches_tflite_micro(compiled, model, device):
    bundle = compiled(f"tflm/{model}.tflite", device)
    assert bundle.selftest.passed and set(bundle.selftest.max_errors) == {0}, bundle.selftest.output
    if device != "lowpower":
        assert bundle.selftest.where.startswith("mps2-") and bundle.selftest.instructions


def bit_exact_over_random_inputs(bundle, model_path, tmp_path) -> int:
    """The largest difference, in LSB, between the bundle (built for the host) and TFLite Micro over RUNS
    random inputs of a one-input, one-output model."""
    run = getattr(shared_library(bundle, tmp_path), f"{bundle.plan.model}_run")
    ins, outs = io_arrays(bundle)
    interpreter = runtime.Interpreter.from_file(str(model_path))
    rng = np.random.default_rng(2026)
    worst = 0
    for _ in range(RUNS):
        ins[0][...] = rng.integers(-128, 128, ins[0].shape)
        assert run(ins[0].ctypes.data_as(ctypes.c_void_p), outs[0].ctypes.data_as(ctypes.c_void_p)) == 0
        interpreter.set_input(ins[0], 0)
        interpreter.invoke()
        expected = np.asarray(interpreter.get_output(0)).astype(np.int32)
        worst = max(worst, int(np.max(np.abs(outs[0].astype(np.int32) - expected))))
    return worst


def test_micro_speech_is_bit_exact_over_random_inputs(compiled, shared_models, tmp_path):
    bundle = compiled("tflm/micro_speech_quantized.tflite")  # the bundle test_example_model_matches_... checks
    assert bit_exact_over_random_inputs(bundle, shared_models / "tflm/micro_speech_quantized.tflite", tmp_path) == 0


@pytest.fixture
def person_detect(compiled):
    """person_detect's host bundle, compiled once per session (about a minute)."""
    return compiled("tflm/person_detect.tflite")


@pytest.mark.slow
def test_person_detect_is_bit_exact_over_random_inputs(person_detect, shared_models, tmp_path):
    assert person_detect.selftest.passed, person_detect.selftest.output
    assert bit_exact_over_random_inputs(person_detect, shared_models / "tflm/person_detect.tflite", tmp_path) == 0


@pytest.mark.slow
def test_person_detect_on_the_emulated_cortex_m4f_gives_the_host_bits(person_detect, compiled):
    board = compiled("tflm/person_detect.tflite", "cortex-m4f")
    assert board.selftest.passed and board.selftest.where.startswith("mps2-"), board.selftest.output
    assert board.selftest.checksums == person_detect.selftest.checksums
    assert board.selftest.instructions
