"""Generated int8 TFLite models that sweep layer shapes for scripts/bench_speed.py (not a test).

Each model has one input and several independent layers that each read it and write a model output, so one
compile measures many shapes (the bundle's per-call report gives each layer's instructions). The shapes cover
kernels 1-3-5-7, strides 1-2, dilations 1-4 (with stride 1, as TFLite's converter writes them), channel counts
odd and not multiples of four, depthwise multipliers 1-8, fully connected depths, pools, resize, broadcast
add, concatenation and softmax. `sweep_models(full=False)` is the small sweep, `full=True` every combination.
Weights are random (seeded); the self-test still checks each bundle bit-exactly against TFLite Micro.
"""

from __future__ import annotations

import itertools
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from tflite_builder import ModelBuilder, Options, Quantization, Tensor, build  # noqa: E402

SAME, VALID = 0, 1  # tflite.Padding
INPUT_QUANT = Quantization((0.05,), (-3,))


@dataclass(frozen=True)
class Conv:
    """A CONV_2D (multiplier 0) or DEPTHWISE_CONV_2D (multiplier >= 1) with SAME padding."""

    kernel: int
    stride: int = 1
    dilation: int = 1
    out_channels: int = 8  # a convolution's; a depthwise one has input channels x multiplier
    multiplier: int = 0


class _Sweep(ModelBuilder):
    """A model whose layers each read the one input and write an output of their own."""

    def __init__(self, shape: tuple[int, ...], seed: int) -> None:
        super().__init__()
        self.rng = np.random.default_rng(seed)
        self.data = self.add(Tensor("input", shape, "int8", INPUT_QUANT))
        self.inputs.append(self.data)

    def _output(self, builtin: str, inputs: tuple[int, ...], shape: tuple[int, ...], options: Options,
                quant: Quantization = Quantization((0.1,), (2,)), version: int = 1) -> None:
        name = f"{builtin.lower()}_{len(self.outputs)}"
        self.outputs.append(self.op(builtin, inputs, Tensor(name, shape, "int8", quant), options, version))

    def _constant(self, name: str, values: np.ndarray, quant: Quantization) -> int:
        return self.add(Tensor(name, values.shape, str(values.dtype), quant, values))

    def conv(self, layer: Conv) -> None:
        n, h, w, c = self.tensors[self.data].shape
        depthwise = layer.multiplier > 0
        out_c = c * layer.multiplier if depthwise else layer.out_channels
        k = layer.kernel
        scales = tuple(float(s) for s in self.rng.uniform(0.002, 0.01, out_c))
        shape = (1, k, k, out_c) if depthwise else (out_c, k, k, c)
        tag = f"w{len(self.tensors)}"
        weight = self._constant(tag, self.rng.integers(-127, 128, shape).astype(np.int8),
                                Quantization(scales, (0,) * out_c, 3 if depthwise else 0))
        bias = self._constant(f"b{len(self.tensors)}", self.rng.integers(-2000, 2000, out_c).astype(np.int32),
                              Quantization(tuple(s * INPUT_QUANT.scales[0] for s in scales), (0,) * out_c))
        out_hw = (-(-h // layer.stride), -(-w // layer.stride))
        fields = {"Padding": SAME, "StrideH": layer.stride, "StrideW": layer.stride,
                  "DilationHFactor": layer.dilation, "DilationWFactor": layer.dilation}
        if depthwise:
            fields["DepthMultiplier"] = layer.multiplier
        taps = k * k * (1 if depthwise else c)
        quant = Quantization((0.05 * 0.006 * 40 * float(np.sqrt(taps)) / 4,), (-5,))
        self._output("DEPTHWISE_CONV_2D" if depthwise else "CONV_2D", (self.data, weight, bias), (n, *out_hw, out_c),
                     Options("DepthwiseConv2DOptions" if depthwise else "Conv2DOptions", fields), quant,
                     version=2 if depthwise else 3)

    def pool(self, builtin: str, size: int, stride: int) -> None:
        n, h, w, c = self.tensors[self.data].shape
        fields = {"Padding": VALID, "StrideH": stride, "StrideW": stride, "FilterHeight": size, "FilterWidth": size}
        out_hw = ((h - size) // stride + 1, (w - size) // stride + 1)
        self._output(builtin, (self.data,), (n, *out_hw, c), Options("Pool2DOptions", fields), INPUT_QUANT)

    def resize(self, factor: int) -> None:
        n, h, w, c = self.tensors[self.data].shape
        size = self._constant(f"size{len(self.tensors)}", np.array([h * factor, w * factor], np.int32), None)
        self._output("RESIZE_NEAREST_NEIGHBOR", (self.data, size), (n, h * factor, w * factor, c),
                     Options("ResizeNearestNeighborOptions"), INPUT_QUANT)

    def broadcast_add(self) -> None:
        shape = self.tensors[self.data].shape
        other = self._constant(f"addend{len(self.tensors)}",
                               self.rng.integers(-128, 128, (1,) * (len(shape) - 1) + shape[-1:]).astype(np.int8),
                               Quantization((0.03,), (1,)))
        self._output("ADD", (self.data, other), shape, Options("AddOptions"))

    def concatenation(self) -> None:
        shape = self.tensors[self.data].shape
        self._output("CONCATENATION", (self.data, self.data), (*shape[:-1], 2 * shape[-1]),
                     Options("ConcatenationOptions", {"Axis": len(shape) - 1}), INPUT_QUANT)

    def softmax(self) -> None:
        self._output("SOFTMAX", (self.data,), self.tensors[self.data].shape, Options("SoftmaxOptions", {"Beta": 1.0}),
                     Quantization((1 / 256,), (-128,)))

    def fully_connected(self, units: int) -> None:
        depth = self.tensors[self.data].shape[-1]
        weight = self._constant(f"fc_w{len(self.tensors)}", self.rng.integers(-127, 128, (units, depth)).astype(np.int8),
                                Quantization((0.004,), (0,)))
        bias = self._constant(f"fc_b{len(self.tensors)}", self.rng.integers(-2000, 2000, units).astype(np.int32),
                              Quantization((0.004 * INPUT_QUANT.scales[0],), (0,)))
        self._output("FULLY_CONNECTED", (self.data, weight, bias), (1, units), Options("FullyConnectedOptions"),
                     Quantization((0.05 * 0.004 * 10 * float(np.sqrt(depth)),), (0,)), version=4)


def _conv_layers(full: bool) -> list[Conv]:
    """Convolutions and depthwise convolutions of every kernel, stride, dilation (with stride 1) and
    multiplier (full), or a few of each (small)."""
    if not full:
        return [Conv(1, out_channels=7), Conv(3, out_channels=16), Conv(3, 2, out_channels=5),
                Conv(5, dilation=2, out_channels=12), Conv(7, 2, out_channels=3), Conv(3, dilation=4, out_channels=9),
                Conv(3, multiplier=1), Conv(5, 2, multiplier=2), Conv(3, dilation=3, multiplier=1),
                Conv(7, multiplier=8)]
    layers = []
    for kernel, stride, dilation in itertools.product((1, 3, 5, 7), (1, 2), (1, 2, 3, 4)):
        if (stride > 1 and dilation > 1) or (kernel == 1 and dilation > 1):
            continue
        layers += [Conv(kernel, stride, dilation, out_channels) for out_channels in (1, 3, 8, 13, 32)]
        layers += [Conv(kernel, stride, dilation, multiplier=m) for m in (1, 2, 3, 8)]
    return layers


def sweep_models(full: bool = False) -> list[tuple[str, bytes]]:
    """(name, .tflite bytes) of the sweep's models (module docstring)."""
    spatial_inputs = [(1, 12, 12, 3), (1, 8, 8, 16), (1, 6, 6, 5)] + ([(1, 10, 10, 1), (1, 4, 4, 64)] if full else [])
    conv_layers = _conv_layers(full)
    models = []
    for seed, shape in enumerate(spatial_inputs):
        chunk = 12 if full else len(conv_layers)
        for first in range(0, len(conv_layers), chunk):
            sweep = _Sweep(shape, seed)
            for layer in conv_layers[first:first + chunk]:
                sweep.conv(layer)
            models.append((f"sweep_conv_{'x'.join(map(str, shape[1:]))}_{first // chunk}", build(sweep.model())))
        other = _Sweep(shape, seed)
        other.pool("MAX_POOL_2D", 2, 2)
        other.pool("AVERAGE_POOL_2D", 3, 1)
        other.resize(2)
        other.broadcast_add()
        other.concatenation()
        other.softmax()
        models.append((f"sweep_other_{'x'.join(map(str, shape[1:]))}", build(other.model())))
    for depth in ((75, 256) if full else (75,)):
        dense = _Sweep((1, depth), depth)
        for units in ((10, 33, 64, 255) if full else (10, 33)):
            dense.fully_connected(units)
        models.append((f"sweep_fc_{depth}", build(dense.model())))
    return models
