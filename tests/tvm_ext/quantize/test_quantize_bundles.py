"""Float models quantized to int8 through the whole compiler: the bundle's self-test is bit-exact with the
quantized graph's integer reference (TVM's Relax VM on the host), and the manifest records the
quantization and its accuracy cost against the float model."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from conftest import CliRun, models_dir, run_cli
from quantize_models import INPUT_SHAPE, write_float_classifier

HELLO_WORLD = "tflm/hello_world_float.tflite"
pytestmark = pytest.mark.slow  # each compiles a bundle: 20-55 s on the shared machine


def _manifest(folder):
    return json.loads((folder / "manifest.json").read_text())


def _quantized_hello_world(cli: CliRun, out, mode: str) -> tuple[str, dict]:
    """`--quantize mode --calibration random` of hello_world_float into `out` by `cli` (conftest's
    `cli_in_process`): its stdout and manifest."""
    proc = cli(str(models_dir() / HELLO_WORLD), "--quantize", mode, "--calibration", "random", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, _manifest(out)


def test_hello_world_float_quantized_on_random_calibration(tmp_path, cli_in_process):
    out = tmp_path / "out"
    stdout, manifest = _quantized_hello_world(cli_in_process, out, "int8")
    assert ("quantize   on random: uniform [-1, 1), 100 samples, seed 1; int8 activations (--activations int8): "
            "relative error") in stdout
    for stage in ("check", "import", "calibrate", "quantize", "accuracy"):  # each timed, the long ones too
        assert re.search(rf"^\[tvm_ext\] {stage} +[0-9.]+ s  CPU", stdout, re.MULTILINE), stage
    quantization = manifest["quantization"]
    assert quantization["calibration_random"] is True
    assert manifest["selftest"]["passed"] and "Relax VM" in manifest["selftest"]["reference"]
    assert manifest["selftest"]["atol_lsb"] == 0
    assert all(output["bit_identical"] for output in manifest["selftest"]["outputs"])
    for where in ("calibration", "held_back"):
        cost = quantization["accuracy"][where]
        assert cost["metric"] == "relative_error" and cost["samples"] == {"calibration": 100, "held_back": 200}[where]
        assert 0.0 < cost["value"] < 0.05, cost  # measured 1.5%: int8 is close to, not equal to, float
    header = (out / "hello_world_float.h").read_text()
    assert "int8_t" in header and "float" not in header.split("run(")[1].split(")")[0]
    # The header and the I/O tensors' manifest entries state the quantization the quantizer chose.
    tensors = {tensor["name"]: tensor for tensor in manifest["tensors"]}
    for kind in ("input", "output"):
        chosen = quantization[f"{kind}s"][0]
        macros = dict(re.findall(rf"#define HELLO_WORLD_FLOAT_{kind.upper()}0_(SCALE|ZERO_POINT) (\S+)", header))
        assert float.fromhex(macros["SCALE"].removesuffix("f")) == chosen["scale"]
        assert int(macros["ZERO_POINT"].strip("()")) == chosen["zero_point"]
        assert tensors[manifest[f"{kind}s"][0]]["quantization"] == {
            "scale": chosen["scale"], "zero_point": chosen["zero_point"], "rounding": "half_away_from_zero"}
    assert "hello_world_float_quantize_input0(" in header and "hello_world_float_dequantize_output0(" in header
    # The float model's 321 float32 weights are 1,284 B; int8 weights with int32 biases are less than half.
    assert manifest["weight_bytes"] < 1284 // 2


def test_classifier_quantized_on_an_npz_file_with_percentile_ranges(tmp_path):
    import tvm_ext

    model = write_float_classifier(tmp_path)
    data = tmp_path / "calibration.npz"
    rng = np.random.default_rng(7)
    np.savez(data, input=rng.normal(0.0, 0.5, (40, *INPUT_SHAPE[1:])).astype(np.float32))
    bundle = tvm_ext.compile(model, out=tmp_path / "out", quantize="int8", calibration=data, ranges="percentile",
                             jobs=1)
    assert bundle.selftest.passed
    quantization = _manifest(bundle.out_dir)["quantization"]
    assert quantization["calibration"] == "calibration.npz" and quantization["calibration_random"] is False
    assert quantization["ranges"] == "percentile"
    assert list(quantization["accuracy"]) == ["calibration"]  # a user's file: no held-back draw of ours
    cost = quantization["accuracy"]["calibration"]
    assert cost["metric"] == "top1_agreement" and cost["samples"] == 40 and cost["value"] >= 0.9
    assert quantization["outputs"][0]["scale"] == pytest.approx(1 / 256) and quantization["outputs"][0][
        "zero_point"] == -128  # SOFTMAX's fixed output quantization
    kinds = {operator.kind for call in bundle.plan.calls for operator in call.operators}
    for kind in ("CONV_2D", "DEPTHWISE_CONV_2D", "ADD", "AVERAGE_POOL_2D", "MAX_POOL_2D", "FULLY_CONNECTED",
                 "SOFTMAX"):
        assert kind in kinds, kinds


def test_auto_says_what_it_decided_and_why(tmp_path, cli_in_process):
    stdout, manifest = _quantized_hello_world(cli_in_process, tmp_path / "out", "auto")
    assert "quantize   quantizing to int8: lowpower has no FPU" in stdout
    assert manifest["quantization"]["decision"].startswith("quantizing to int8: lowpower has no FPU")


def test_a_quantized_model_that_still_does_not_fit_is_refused_by_bytes(tmp_path):
    proc = run_cli(str(models_dir() / "mlperf_tiny/ad01_fp32.tflite"), "--target", "cortex-m0plus",
                   "--quantize", "int8", "--calibration", "random", "-o", str(tmp_path / "out"))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    # Refused before quantizing (its bundle needs 278,984 B): a quarter of the float weights alone is over.
    assert ("weights need 265,864 B of flash (code not counted: not built and measured on an emulated board) but "
            "cortex-m0plus has 262,144 B (3,720 B over), even "
            "quantized to int8 (a quarter of the float weights' 1,063,456 B); nothing was quantized") in lines[0]
