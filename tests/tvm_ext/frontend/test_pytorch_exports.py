"""CNNs written in PyTorch at microcontroller sizes (random weights), exported by both of torch.onnx's exporters
(TorchScript's and torch.export's), compile float and quantized by onnxruntime's quantize_static, and equal
onnxruntime: ShuffleNetV2's units (torch.chunk, the channel shuffle's views), MobileNetV2's inverted residuals
(ReLU6, residual adds), a ResNet basic block with its pools.

The TorchScript exporter writes torch.chunk as Shape -> Gather -> Add -> Div -> Mul -> Slice, which left a tensor
without a static shape: the compile crashed in the layout pass (exit 3); torch.export's writes it as a Split,
which TVM's kernels return as a tuple: refused. Needs the ``models`` extra (torch, onnxscript)."""

from __future__ import annotations

import onnx
import pytest
from onnxruntime import quantization

from onnxruntime_match import NormalCalibration, mismatches
from tvm_ext.compile import compile

SHAPE = (1, 3, 32, 32)


def _export(net: str, dynamo: bool, path) -> None:
    torch = pytest.importorskip("torch")
    if dynamo:
        pytest.importorskip("onnxscript")
    from pytorch_nets import CNNS

    torch.onnx.export(CNNS[net](), (torch.randn(*SHAPE),), str(path), dynamo=dynamo, opset_version=17)
    onnx.save(onnx.load(str(path)), str(path))  # torch.export's exporter keeps the weights in a file beside


# Each net by the exporter whose form of it differs (both for the channel split and the residual adds).
CASES = [("shufflenet_v2", False), ("shufflenet_v2", True), ("mobilenet_v2", False), ("mobilenet_v2", True),
         ("resnet", False)]


@pytest.mark.slow
@pytest.mark.parametrize(("net", "dynamo"), CASES,
                         ids=[f"{net}-{'dynamo' if dynamo else 'torchscript'}" for net, dynamo in CASES])
def test_pytorch_export_compiles_float_and_quantized(tmp_path, net, dynamo):
    path = tmp_path / f"{net}.onnx"
    _export(net, dynamo, path)
    bundle = compile(path, "lowpower", tmp_path / "float")
    assert mismatches(bundle, path, 5, float_tolerance=1e-4) == []
    quantized = tmp_path / f"{net}_int8.onnx"
    input_name = onnx.load(str(path)).graph.input[0].name
    quantization.quantize_static(str(path), str(quantized), NormalCalibration(input_name, SHAPE),
                                 quant_format=quantization.QuantFormat.QDQ, per_channel=True)
    bundle = compile(quantized, "lowpower", tmp_path / "int8")
    assert mismatches(bundle, quantized, 20) == []
