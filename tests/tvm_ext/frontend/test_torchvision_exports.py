"""torchvision's classification models at microcontroller sizes (random weights, 3x64x64 input, 10 classes),
exported by both of torch.onnx's exporters (TorchScript's and torch.export's), float and quantized by
onnxruntime's ``quantize_static`` (QDQ, per-channel weights), compile for ``lowpower`` and equal onnxruntime.

These are the models a PyTorch user brings (issue 28): we did not write them. Those whose float weights exceed
``lowpower``'s 2 MiB of flash are compiled quantized only. Needs the ``models`` extra (torch, torchvision,
onnxscript); see tests/tvm_ext/frontend/torchvision_import.py for how torchvision imports beside torch's CPU build."""

from __future__ import annotations

import functools
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnxruntime import quantization

from conftest import session_folder, written_once
from onnxruntime_match import NormalCalibration, mismatches
from torchvision_import import import_torchvision
from tvm_ext.compile import compile

SHAPE = (1, 3, 64, 64)
CLASSES = 10
# A float model's output's largest difference from onnxruntime's, relative to the output's largest magnitude:
# float32 sums in another order (onnxruntime's MLAS blocks them differently from our loops) through the network.
# A quantized model's outputs are compared exactly.
FLOAT_MODEL_TOLERANCE = 1e-4

# Builder of each model from torchvision.models, at the smallest width torchvision offers for it.
MODELS: dict[str, Callable] = {
    "mobilenet_v2": lambda models: models.mobilenet_v2(width_mult=0.35, num_classes=CLASSES),
    "mobilenet_v3_small": lambda models: models.mobilenet_v3_small(num_classes=CLASSES),
    "mnasnet0_5": lambda models: models.mnasnet0_5(num_classes=CLASSES),
    "shufflenet_v2_x0_5": lambda models: models.shufflenet_v2_x0_5(num_classes=CLASSES),
    # Whose Convs onnxruntime mostly keeps float (README, "torchvision's classification models"): int8 weights
    # dequantized in the kernels, sums of more than 128 taps in MLAS's blocks.
    "squeezenet1_1": lambda models: models.squeezenet1_1(num_classes=CLASSES),
}
# The models whose float weights fit lowpower's flash (the others are over 2 MiB as float, under it as int8).
FLOAT_FITS = ("mobilenet_v2", "shufflenet_v2_x0_5")
EXPORTERS = ("torchscript", "dynamo")


def _export(model: str, exporter: str, path) -> None:
    """Writes torchvision's ``model`` (seed 0, eval mode) to ``path`` by ``exporter``, weights inside the file."""
    torch = pytest.importorskip("torch")
    if exporter == "dynamo":
        pytest.importorskip("onnxscript")
    torchvision = import_torchvision()
    torch.manual_seed(0)
    net = MODELS[model](torchvision.models).eval()
    torch.onnx.export(net, (torch.randn(*SHAPE),), str(path), dynamo=exporter == "dynamo", opset_version=17)
    onnx.save(onnx.load(str(path)), str(path))  # torch.export's exporter keeps the weights in a file beside


@pytest.fixture(scope="session")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str, Path], None]:
    """`exported(model, exporter, path)`: `_export`'s file copied to `path`, exported once per session (the float
    and the quantized tests export the same models by the same exporters: each export takes seconds)."""
    folder = session_folder(tmp_path_factory, "torchvision_exports")

    def copy(model: str, exporter: str, path: Path) -> None:
        shutil.copyfile(written_once(folder, f"{model}-{exporter}.onnx", functools.partial(_export, model, exporter)),
                        path)

    return copy


def _quantize(path, quantized) -> None:
    input_name = onnx.load(str(path)).graph.input[0].name
    quantization.quantize_static(str(path), str(quantized), NormalCalibration(input_name, SHAPE),
                                 quant_format=quantization.QuantFormat.QDQ, per_channel=True)


def _normal_inputs(name: str) -> Callable[[np.random.Generator], dict[str, np.ndarray]]:
    """Standard-normal images: the calibration's distribution (onnxruntime_match's default draws floats with
    twice its deviation, where a quantized model's input saturates more)."""
    return lambda rng: {name: rng.standard_normal(SHAPE).astype(np.float32)}


# Every model by TorchScript's exporter; by torch.export's those whose ONNX form it changes most (torch.chunk as a
# Split, residual adds and ReLU6 as other nodes), to keep the suite's time: each case is a whole compile.
QUANTIZED_CASES = [(model, "torchscript") for model in MODELS] + [(model, "dynamo") for model in FLOAT_FITS]
FLOAT_CASES = [(model, exporter) for model in FLOAT_FITS for exporter in EXPORTERS]


@pytest.mark.slow
@pytest.mark.parametrize(("model", "exporter"), QUANTIZED_CASES, ids=[f"{m}-{e}" for m, e in QUANTIZED_CASES])
def test_torchvision_model_quantized_by_onnxruntime_equals_onnxruntime(exported, tmp_path, model, exporter):
    path = tmp_path / f"{model}.onnx"
    exported(model, exporter, path)
    quantized = tmp_path / f"{model}_int8.onnx"
    _quantize(path, quantized)
    bundle = compile(quantized, "lowpower", tmp_path / "int8")
    assert mismatches(bundle, quantized, 10) == []
    name = onnx.load(str(quantized)).graph.input[0].name
    assert mismatches(bundle, quantized, 10, inputs=_normal_inputs(name), seed=1) == []


@pytest.mark.slow
@pytest.mark.parametrize(("model", "exporter"), FLOAT_CASES, ids=[f"{m}-{e}" for m, e in FLOAT_CASES])
def test_torchvision_model_in_float_equals_onnxruntime(exported, tmp_path, model, exporter):
    path = tmp_path / f"{model}.onnx"
    exported(model, exporter, path)
    bundle = compile(path, "lowpower", tmp_path / "float")
    assert mismatches(bundle, path, 5, float_tolerance=FLOAT_MODEL_TOLERANCE) == []
