"""Every shared int8 model's bundle, built as C and called on 20 deterministic random inputs, gives outputs
identical to the TFLite Micro interpreter's: 0 LSB on every element. It builds without a warning under
-Wconversion -Wshadow and passes its self-test under ASan and UBSan. The same C on the emulated Cortex-M4F
gives the host's bits."""

from __future__ import annotations

import ctypes
import re
import subprocess

import numpy as np
import pytest
from tflite_micro import runtime

from c_checks import loops_without_constant_bounds, strict_sanitized_selftest

INT8_MODELS = [
    "tflm/hello_world_int8.tflite",
    "mlperf_tiny/ad01_int8.tflite",
    "mlperf_tiny/kws_ref_model.tflite",
    pytest.param("mlperf_tiny/str_ww_ref_model.tflite", marks=pytest.mark.slow),
    pytest.param("mlperf_tiny/pretrainedResnet_quant.tflite", marks=pytest.mark.slow),
    pytest.param("mlperf_tiny/vww_96_int8.tflite", marks=pytest.mark.slow),
    pytest.param("zoo/vit_tiny_16_int8.tflite", marks=pytest.mark.slow),  # a transformer: RSQRT, BATCH_MATMUL
]
RUNS = 20


def shared_library(bundle, tmp_path) -> ctypes.CDLL:
    """The bundle's C built as a shared library, to call its run function from Python."""
    m = bundle.plan.model
    sources = [str(bundle.out_dir / f"{m}_{part}.c") for part in ("kernels", "model", "weights")]
    library = tmp_path / f"lib{m}.so"
    subprocess.run(["cc", "-std=c99", "-O2", "-shared", "-fPIC", "-o", str(library), *sources, "-lm"], check=True)
    return ctypes.CDLL(str(library))


def io_arrays(bundle):
    plan = bundle.plan
    ins = [np.zeros(plan.tensors[n].shape, plan.tensors[n].dtype) for n in plan.inputs]
    outs = [np.zeros(plan.tensors[n].shape, plan.tensors[n].dtype) for n in plan.outputs]
    return ins, outs


@pytest.mark.parametrize("model", INT8_MODELS, ids=lambda m: m.split("/")[1])
def test_bundle_is_bit_exact_with_tflite_micro(shared_models, compiled, tmp_path, model):
    bundle = compiled(model)
    assert bundle.selftest.passed, bundle.selftest.output
    library = shared_library(bundle, tmp_path)
    run = getattr(library, f"{bundle.plan.model}_run")
    ins, outs = io_arrays(bundle)
    assert len(ins) == 1 and len(outs) == 1, "the shared int8 models have one input and one output"
    interpreter = runtime.Interpreter.from_file(str(shared_models / model))
    rng = np.random.default_rng(2026)
    worst = 0
    for _ in range(RUNS):
        info = np.iinfo(ins[0].dtype)
        ins[0][...] = rng.integers(info.min, info.max + 1, ins[0].shape)
        assert run(ins[0].ctypes.data_as(ctypes.c_void_p), outs[0].ctypes.data_as(ctypes.c_void_p)) == 0
        interpreter.set_input(ins[0], 0)
        interpreter.invoke()
        expected = np.asarray(interpreter.get_output(0))
        worst = max(worst, int(np.max(np.abs(outs[0].astype(np.int32) - expected.astype(np.int32)))))
    assert worst == 0


@pytest.mark.parametrize("model", INT8_MODELS, ids=lambda m: m.split("/")[1])
def test_builds_warning_free_and_passes_under_sanitizers(compiled, tmp_path, model):
    proc = strict_sanitized_selftest(compiled(model).out_dir, tmp_path)
    assert proc.returncode == 0 and "PASS" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("model", INT8_MODELS, ids=lambda m: m.split("/")[1])
def test_every_loop_bound_is_a_constant(compiled, model):
    bundle = compiled(model)
    assert loops_without_constant_bounds(bundle.out_dir, bundle.plan.model) == []


def test_weights_stay_integer_in_flash(compiled):
    bundle = compiled("mlperf_tiny/kws_ref_model.tflite")
    assert {t.dtype for t in bundle.plan.constants()} <= {"int8", "int16", "int32"}
    # The model's int8 weights and int32 biases: 24,376 B in its TFLite buffers. The bundle adds what TFLite Micro
    # computes at start-up or per element instead: each output channel's requantization multiplier (int32) and
    # shift (int8), and the softmax's table of exp terms (int32[256]).
    channels = sum(t.elements for t in bundle.plan.constants() if t.name.endswith("_multiplier"))
    assert channels >= 500  # kws: 64 + 4 x (64 + 64) + 12 output channels
    exp_tables = [t for t in bundle.plan.constants() if t.name.endswith("_exp_table")]
    assert [(t.dtype, t.elements) for t in exp_tables] == [("int32", 256)]
    assert bundle.weight_bytes <= 24_376 + 5 * channels + 4 * 256
    kernels = (bundle.out_dir / "kws_ref_model_kernels.c").read_text()
    assert not re.search(r"\b(float|double)\b", kernels)
    assert not re.search(r"\b(expf?|logf?|sqrtf?|tanhf?|roundf?)\s*\(", kernels)


@pytest.mark.parametrize("model, device", [
    ("tflm/hello_world_int8.tflite", "cortex-m0plus"),
    ("tflm/hello_world_int8.tflite", "cortex-m4f"),
    ("mlperf_tiny/ad01_int8.tflite", "cortex-m4f"),
    ("mlperf_tiny/kws_ref_model.tflite", "cortex-m4f"),
    pytest.param("mlperf_tiny/str_ww_ref_model.tflite", "cortex-m4f", marks=pytest.mark.slow),
    pytest.param("mlperf_tiny/pretrainedResnet_quant.tflite", "cortex-m4f", marks=pytest.mark.slow),
    pytest.param("mlperf_tiny/vww_96_int8.tflite", "cortex-m4f", marks=pytest.mark.slow),
    pytest.param("zoo/vit_tiny_16_int8.tflite", "cortex-m4f", marks=pytest.mark.slow),
])
def test_int8_bundle_on_the_emulated_core_gives_the_host_bits(compiled, model, device):
    host = compiled(model)
    board = compiled(model, device)
    assert board.selftest.passed and board.selftest.where.startswith("mps2-"), board.selftest.output
    assert board.selftest.checksums == host.selftest.checksums
    assert board.selftest.instructions
