"""Bundles for a Cortex-M profile build with arm-none-eabi-gcc and pass their self-test on the emulated board
(QEMU), with the outputs of the host build; the manifest records flash, RAM and instructions per inference."""

from __future__ import annotations

import json

import pytest

from conftest import example_model

# Float models that fit cortex-m4f's 256 KiB SRAM / 1 MiB flash (ad01_fp32's 1.06 MB of weights do not).
FLOAT_MODELS = ["tflm/hello_world_float.tflite", "mlperf_tiny/pretrainedResnet.tflite", "mlperf_tiny/vww_96_float.tflite"]


@pytest.mark.slow
@pytest.mark.parametrize("model", FLOAT_MODELS, ids=lambda m: m.split("/")[1])
def test_float_model_runs_on_cortex_m4f(compiled, model):
    host, board = compiled(model), compiled(model, "cortex-m4f")
    assert board.selftest.passed and board.selftest.where == "mps2-an386", board.selftest.output
    assert board.selftest.instructions and board.selftest.instructions > 0
    # The same float32 arithmetic in the same order, and the bundle's own expf (not newlib's or glibc's): the
    # same outputs, so the same errors against LiteRT.
    assert host.selftest.max_errors == board.selftest.max_errors


def test_example_runs_on_every_emulated_profile(compiled):
    host = compiled(example_model)
    for device, board in [("cortex-m4f", "mps2-an386"), ("cortex-m7", "mps2-an500"), ("cortex-m33", "mps2-an505"),
                          ("cortex-m55", "mps3-an547")]:
        bundle = compiled(example_model, device)
        assert bundle.selftest.passed and bundle.selftest.where == board, bundle.selftest.output
        assert bundle.selftest.max_errors[0] == pytest.approx(host.selftest.max_errors[0], abs=1e-6), device
        facts = json.loads((bundle.out_dir / "manifest.json").read_text())["cortex_m"]
        assert facts["board"] == board and facts["instructions_per_inference"] == bundle.selftest.instructions
        assert facts["arena_bytes"] == bundle.arena_bytes
        assert facts["weights_bytes"] >= bundle.weight_bytes
        assert facts["stack_peak_bytes"] > 0 and facts["flash_bytes"] > facts["weights_bytes"]


# The int8 models whose MAC kernels dominate, against TFLite Micro + CMSIS-NN's Helium build on the same board
# (../shared/docs/cortex-m55-riscv-under-qemu.md).
HELIUM_MODELS = ["mlperf_tiny/kws_ref_model.tflite", "mlperf_tiny/vww_96_int8.tflite",
                 "mlperf_tiny/pretrainedResnet_quant.tflite", "mlperf_tiny/str_ww_ref_model.tflite",
                 "mlperf_tiny/ad01_int8.tflite", "tflm/person_detect.tflite"]


@pytest.mark.slow
@pytest.mark.parametrize("model", HELIUM_MODELS, ids=lambda m: m.split("/")[1])
def test_int8_model_runs_its_helium_helpers_bit_exactly_on_cortex_m55(compiled, model):
    """The bundle for cortex-m55 defines the MAC helpers with their Helium bodies (VMLADAVA on 16 int8 lanes)
    and its self-test on mps3-an547 matches TFLite Micro's outputs bit for bit."""
    bundle = compiled(model, "cortex-m55")
    internal = (bundle.out_dir / f"{bundle.plan.model}_internal.h").read_text()
    assert "vmladavaq_s8(" in internal and "_pack_low_halves(word01" not in internal  # not dual_mac.h.in
    assert bundle.selftest.passed and bundle.selftest.where == "mps3-an547", bundle.selftest.output
