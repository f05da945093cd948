"""ConvTranspose's `output_shape` attribute as explicit pads (TVM 0.27's converter ignores the attribute and
computes the output shape from `pads` alone: a wrong shape, caught only by the self-test's array sizes)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class OutputShapeError(ValueError):
    """`output_shape` asks for an output that no pads and output_padding of TVM's ConvTranspose give."""


def output_shape_as_pads(attrs: dict[str, Any], input_spatial: Sequence[int],
                         kernel_spatial: Sequence[int]) -> dict[str, Any]:
    """`attrs` of an ONNX ConvTranspose with `output_shape` (and `auto_pad`) replaced by `pads` and
    `output_padding` that give that output shape, by the ONNX spec's rule:

        total[i] = stride[i] * (in[i] - 1) + output_padding[i] + (kernel[i] - 1) * dilation[i] + 1 - out[i]
        SAME_UPPER: pads begin total // 2, end total - total // 2; otherwise begin total - total // 2, end total // 2

    A negative end pad (the output is longer than the kernel reaches) becomes extra output_padding; a
    negative begin pad has no equivalent and raises OutputShapeError.
    """
    rank = len(input_spatial)
    output_shape = [int(d) for d in attrs["output_shape"]][-rank:]
    strides = list(attrs.get("strides", [1] * rank))
    dilations = list(attrs.get("dilations", [1] * rank))
    output_padding = list(attrs.get("output_padding", [0] * rank))
    auto_pad = attrs.get("auto_pad", "NOTSET")
    upper = (auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad) == "SAME_UPPER"
    begins, ends = [], []
    for i in range(rank):
        total = (strides[i] * (input_spatial[i] - 1) + output_padding[i] + (kernel_spatial[i] - 1) * dilations[i]
                 + 1 - output_shape[i])
        begin = total // 2 if upper else total - total // 2
        end = total - begin
        if begin < 0:
            raise OutputShapeError(f"output_shape {output_shape} needs a negative begin pad on spatial axis {i}")
        if end < 0:
            output_padding[i] -= end
            end = 0
        begins.append(begin)
        ends.append(end)
    converted = {k: v for k, v in attrs.items() if k not in ("output_shape", "auto_pad")}
    return {**converted, "pads": begins + ends, "output_padding": output_padding}
