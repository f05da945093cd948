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

torch = pytest.importorskip("torch")
nn = torch.nn


def _channel_shuffle(x, groups: int):
    batch, channels, height, width = x.size()
    x = x.view(batch, groups, channels // groups, height, width)
    return torch.transpose(x, 1, 2).contiguous().view(batch, -1, height, width)


class _ShuffleUnit(nn.Module):
    """ShuffleNetV2's stride-1 unit, as torchvision writes it."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        half = channels // 2
        self.branch = nn.Sequential(nn.Conv2d(half, half, 1, bias=False), nn.BatchNorm2d(half), nn.ReLU(),
                                    nn.Conv2d(half, half, 3, 1, 1, groups=half, bias=False), nn.BatchNorm2d(half),
                                    nn.Conv2d(half, half, 1, bias=False), nn.BatchNorm2d(half), nn.ReLU())

    def forward(self, x):
        first, second = x.chunk(2, dim=1)
        return _channel_shuffle(torch.cat((first, self.branch(second)), dim=1), 2)


class _InvertedResidual(nn.Module):
    def __init__(self, channels: int, expand: int) -> None:
        super().__init__()
        wide = channels * expand
        self.layers = nn.Sequential(nn.Conv2d(channels, wide, 1, bias=False), nn.BatchNorm2d(wide), nn.ReLU6(),
                                    nn.Conv2d(wide, wide, 3, 1, 1, groups=wide, bias=False), nn.BatchNorm2d(wide),
                                    nn.ReLU6(), nn.Conv2d(wide, channels, 1, bias=False), nn.BatchNorm2d(channels))

    def forward(self, x):
        return x + self.layers(x)


class _BasicBlock(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Conv2d(channels, channels, 3, 1, 1, bias=False), nn.BatchNorm2d(channels),
                                    nn.ReLU(), nn.Conv2d(channels, channels, 3, 1, 1, bias=False),
                                    nn.BatchNorm2d(channels))

    def forward(self, x):
        return torch.relu(x + self.layers(x))


def _net(body: nn.Module, pool: nn.Module) -> nn.Module:
    """Stem (conv 3x3 stride 2, ReLU), ``body`` (16 channels), ``pool``, global average, a 10-class Linear."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.ReLU(), pool, body, nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                        nn.Linear(16, 10))
    for module in net.modules():  # batch statistics away from 0 and 1, as after training
        if isinstance(module, nn.BatchNorm2d):
            module.running_mean.uniform_(-0.5, 0.5)
            module.running_var.uniform_(0.5, 2.0)
    return net.eval()


NETS = {
    "shufflenet_v2": lambda: _net(nn.Sequential(_ShuffleUnit(16), _ShuffleUnit(16)), nn.Identity()),
    "mobilenet_v2": lambda: _net(nn.Sequential(_InvertedResidual(16, 4), _InvertedResidual(16, 4)), nn.Identity()),
    "resnet": lambda: _net(_BasicBlock(16), nn.MaxPool2d(3, 2, 1)),
}
SHAPE = (1, 3, 32, 32)


def _export(net: str, dynamo: bool, path) -> None:
    if dynamo:
        pytest.importorskip("onnxscript")
    torch.onnx.export(NETS[net](), (torch.randn(*SHAPE),), str(path), dynamo=dynamo, opset_version=17)
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
