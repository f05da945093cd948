"""The networks the PyTorch export tests build (test_pytorch_exports.py, test_pytorch_recurrent_exports.py),
imported by those tests only when they run: importing torch costs each pytest process some 2.7 CPU-seconds
(measured on the loaded 2-core machine), which a pytest-xdist worker that runs none of them no longer pays at
collection (conftest leaves torch out of TVM's import). Needs the ``models`` extra (torch)."""

from __future__ import annotations

import torch
from torch import nn

def _channel_shuffle(x, groups: int):
    batch, channels, height, width = x.size()
    x = x.view(batch, groups, channels // groups, height, width)
    return torch.transpose(x, 1, 2).contiguous().view(batch, -1, height, width)


class ShuffleUnit(nn.Module):
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


class InvertedResidual(nn.Module):
    def __init__(self, channels: int, expand: int) -> None:
        super().__init__()
        wide = channels * expand
        self.layers = nn.Sequential(nn.Conv2d(channels, wide, 1, bias=False), nn.BatchNorm2d(wide), nn.ReLU6(),
                                    nn.Conv2d(wide, wide, 3, 1, 1, groups=wide, bias=False), nn.BatchNorm2d(wide),
                                    nn.ReLU6(), nn.Conv2d(wide, channels, 1, bias=False), nn.BatchNorm2d(channels))

    def forward(self, x):
        return x + self.layers(x)


class BasicBlock(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Conv2d(channels, channels, 3, 1, 1, bias=False), nn.BatchNorm2d(channels),
                                    nn.ReLU(), nn.Conv2d(channels, channels, 3, 1, 1, bias=False),
                                    nn.BatchNorm2d(channels))

    def forward(self, x):
        return torch.relu(x + self.layers(x))


def classifier(body: nn.Module, pool: nn.Module) -> nn.Module:
    """Stem (conv 3x3 stride 2, ReLU), ``body`` (16 channels), ``pool``, global average, a 10-class Linear."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.ReLU(), pool, body, nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                        nn.Linear(16, 10))
    for module in net.modules():  # batch statistics away from 0 and 1, as after training
        if isinstance(module, nn.BatchNorm2d):
            module.running_mean.uniform_(-0.5, 0.5)
            module.running_var.uniform_(0.5, 2.0)
    return net.eval()


CNNS = {  # by name: a function building the network (seed 0, eval mode)
    "shufflenet_v2": lambda: classifier(nn.Sequential(ShuffleUnit(16), ShuffleUnit(16)), nn.Identity()),
    "mobilenet_v2": lambda: classifier(nn.Sequential(InvertedResidual(16, 4), InvertedResidual(16, 4)),
                                       nn.Identity()),
    "resnet": lambda: classifier(BasicBlock(16), nn.MaxPool2d(3, 2, 1)),
}


class KeywordNet(nn.Module):
    """`cell` (nn.GRU or nn.LSTM, batch first: `features` per frame, `units` wide) over the frames, then a Linear
    on the last step's hidden state to `classes` outputs."""

    def __init__(self, cell: type[nn.Module], features: int, units: int, classes: int) -> None:
        super().__init__()
        self.cell = cell(features, units, batch_first=True)
        self.head = nn.Linear(units, classes)

    def forward(self, x):
        return self.head(self.cell(x)[0][:, -1])
