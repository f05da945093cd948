"""TE definitions of TFLite's int8 CONV_2D and DEPTHWISE_CONV_2D (NHWC, int32 accumulation), and of their
16x8 variants (int16 data, int8 weights, int64 accumulation and bias: TFLite Micro's int16 ConvPerChannel).

Padding follows the reference kernels: taps outside the input contribute nothing, which equals padding
the input with its zero point. ``padding`` is (top, left, bottom, right) in elements.

With ``zero_point_in_bias`` the caller has folded the input zero point into the bias at compile time
(``fold_zero_point_into_bias``): the kernel multiplies the raw int8 values, the input padded with its
zero point, so no MAC subtracts it.
"""

from __future__ import annotations

import enum
from typing import Optional, Sequence

from tvm import te, tirx

from .dense import PAIRED_TILE, TILED_TILE, paired_weight
from .requantize import OutputStage, accumulator_dtype, requantize


class WeightLayout(enum.Enum):
    """The axis order of a CONV_2D weight: HWIO as TVM's frontend gives it, or OHWI (TFLite's own order) where
    the reduction over (ry, rx, rc) reads contiguous memory for each output channel."""

    HWIO = "HWIO"
    OHWI = "OHWI"
    OHWI_PADDED = "OHWI_PADDED"
    """OHWI as [O, Kp]: each output channel's KH * KW * I weights in OHWI's order, then zeros up to Kp (a
    backend's copied windows of Kp inputs, `backends.backend.KernelSchedules.conv_weight_length`); the kernel is
    given its ``kernel_size``."""


def _centered_input(
    data: te.Tensor, zero_point: int, padding: Sequence[int], out_hw: tuple[int, int],
    kernel_hw: tuple[int, int], strides: Sequence[int], dilation: Sequence[int], zero_point_in_bias: bool,
    stage: OutputStage,
) -> te.Tensor:
    """(x - zero_point) in the accumulator type (``accumulator_dtype`` of ``stage``) with zeros outside the
    image, over the padded extent the kernel reads; with ``zero_point_in_bias``, x in the accumulator type
    with the zero point outside (the bias holds the correction)."""
    n, h, w, c = (int(d) for d in data.shape)
    accumulator = accumulator_dtype(data, stage)
    top, left = padding[0], padding[1]
    padded_h = (out_hw[0] - 1) * strides[0] + (kernel_hw[0] - 1) * dilation[0] + 1
    padded_w = (out_hw[1] - 1) * strides[1] + (kernel_hw[1] - 1) * dilation[1] + 1

    def value(b, y, x, ch):
        iy, ix = y - top, x - left
        if not any(padding):  # every tap the kernel reads is inside the image: no test
            raw = data[b, iy, ix, ch].astype(accumulator)
            return raw if zero_point_in_bias else raw - zero_point
        inside = tirx.all(iy >= 0, iy < h, ix >= 0, ix < w)
        if zero_point_in_bias:
            return tirx.if_then_else(inside, data[b, iy, ix, ch].astype(accumulator), tirx.const(zero_point, accumulator))
        centered = data[b, iy, ix, ch].astype(accumulator) - zero_point
        return tirx.if_then_else(inside, centered, tirx.const(0, accumulator))

    return te.compute((n, padded_h, padded_w, c), value, name="centered_input")


def _output_hw(data: te.Tensor, kernel_hw, strides, padding, dilation) -> tuple[int, int]:
    _, h, w, _ = (int(d) for d in data.shape)
    out_h = (h + padding[0] + padding[2] - (kernel_hw[0] - 1) * dilation[0] - 1) // strides[0] + 1
    out_w = (w + padding[1] + padding[3] - (kernel_hw[1] - 1) * dilation[1] - 1) // strides[1] + 1
    return out_h, out_w


def conv2d_int8(
    data: te.Tensor, weight: te.Tensor, bias: Optional[te.Tensor], *, input_zero_point: int,
    output: OutputStage, strides: Sequence[int], padding: Sequence[int], dilation: Sequence[int],
    multiplier: Optional[te.Tensor] = None, shift: Optional[te.Tensor] = None, zero_point_in_bias: bool = False,
    weight_layout: WeightLayout = WeightLayout.HWIO, paired_weights: bool = False,
    kernel_size: Optional[Sequence[int]] = None, units: Optional[int] = None, tiled_rows: bool = False,
) -> te.Tensor:
    """CONV_2D: data NHWC int8, weight int8 in ``weight_layout`` (HWIO by default), bias int32[O] -> NHWC int8
    (int16 data, int64 bias -> int16: 16x8). With ``paired_weights`` (int8 data) the weight is
    `tvm_ext.kernels.dense.pair_weights`' int32 words of its OHWI values as [O, KH * KW * I], reshaped to
    [O / 8, KH, KW, I, 4], instead; with ``tiled_rows`` `tvm_ext.kernels.dense.tile_rows`' int8 bytes of them,
    reshaped to [O / 8, KH, KW, I, 8] (each tile of eight channels' window, input after input). ``kernel_size``
    (KH, KW): the window of an OHWI_PADDED weight.

    Per-channel ``multiplier``/``shift`` tensors, when given, replace those of ``output``.

    With ``units`` the output has that many channels, fewer than the weight's: the channels past them are zeros
    that pad the channels to whole tiles of a backend's MAC helper (``LoweringContext.dense_unit_tile``); their
    sums are computed and never read.
    """
    stage = output.per_channel(multiplier, shift)
    if paired_weights:
        kh, kw, cin = (int(d) for d in weight.shape[1:4])
        cout = int(weight.shape[0]) * PAIRED_TILE
    elif tiled_rows:
        kh, kw, cin = (int(d) for d in weight.shape[1:4])
        cout = int(weight.shape[0]) * TILED_TILE
    elif weight_layout is WeightLayout.OHWI:
        cout, kh, kw, cin = (int(d) for d in weight.shape)
    elif weight_layout is WeightLayout.OHWI_PADDED:
        (kh, kw), cin, cout = (int(d) for d in kernel_size), int(data.shape[3]), int(weight.shape[0])
    else:
        kh, kw, cin, cout = (int(d) for d in weight.shape)

    def weight_at(ry, rx, rc, o):
        if paired_weights:
            return paired_weight(weight, o, ry, rx, rc)
        if tiled_rows:
            return weight[o // TILED_TILE, ry, rx, rc, o % TILED_TILE]
        if weight_layout is WeightLayout.OHWI_PADDED:
            return weight[o, (ry * kw + rx) * cin + rc]
        return weight[o, ry, rx, rc] if weight_layout is WeightLayout.OHWI else weight[ry, rx, rc, o]

    out_h, out_w = _output_hw(data, (kh, kw), strides, padding, dilation)
    centered = _centered_input(data, input_zero_point, padding, (out_h, out_w), (kh, kw), strides, dilation,
                               zero_point_in_bias, stage)
    ry, rx, rc = te.reduce_axis((0, kh), "ry"), te.reduce_axis((0, kw), "rx"), te.reduce_axis((0, cin), "rc")
    acc = te.compute(
        (int(data.shape[0]), out_h, out_w, cout),
        lambda b, y, x, o: te.sum(
            centered[b, y * strides[0] + ry * dilation[0], x * strides[1] + rx * dilation[1], rc]
            * (weight_at(ry, rx, rc, o) if paired_weights else weight_at(ry, rx, rc, o).astype(centered.dtype)),
            axis=[ry, rx, rc],
        ),
        name="acc",
    )
    shape = (*acc.shape[:3], cout if units is None else units)
    return te.compute(shape, lambda b, y, x, o: requantize(acc[b, y, x, o], o, stage, bias), name="conv2d_int8")


def depthwise_conv2d_int8(
    data: te.Tensor, weight: te.Tensor, bias: Optional[te.Tensor], *, input_zero_point: int,
    output: OutputStage, strides: Sequence[int], padding: Sequence[int], dilation: Sequence[int],
    multiplier: Optional[te.Tensor] = None, shift: Optional[te.Tensor] = None, zero_point_in_bias: bool = False,
) -> te.Tensor:
    """DEPTHWISE_CONV_2D: data NHWC int8, weight (KH, KW, C*depth_multiplier) int8 -> NHWC int8 (int16
    data -> int16: 16x8).

    Output channel o reads input channel o // depth_multiplier, as in TFLite.
    """
    stage = output.per_channel(multiplier, shift)
    kh, kw, cout = (int(d) for d in weight.shape)
    depth_multiplier = cout // int(data.shape[3])
    out_h, out_w = _output_hw(data, (kh, kw), strides, padding, dilation)
    centered = _centered_input(data, input_zero_point, padding, (out_h, out_w), (kh, kw), strides, dilation,
                               zero_point_in_bias, stage)
    ry, rx = te.reduce_axis((0, kh), "ry"), te.reduce_axis((0, kw), "rx")
    acc = te.compute(
        (int(data.shape[0]), out_h, out_w, cout),
        lambda b, y, x, o: te.sum(
            centered[b, y * strides[0] + ry * dilation[0], x * strides[1] + rx * dilation[1], o // depth_multiplier]
            * weight[ry, rx, o].astype(centered.dtype),
            axis=[ry, rx],
        ),
        name="acc",
    )
    return te.compute(
        acc.shape, lambda b, y, x, o: requantize(acc[b, y, x, o], o, stage, bias), name="depthwise_conv2d_int8"
    )

