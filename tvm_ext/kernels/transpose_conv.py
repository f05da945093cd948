"""TE definition of TFLite's int8 TRANSPOSE_CONV (NHWC, int32 accumulation, per-channel requantization) and of its
16x8 variant (int16 data, int8 weights, int64 accumulation and bias, as TFLite Micro's int16 TransposeConv).

TFLite Micro's reference kernel scatters: each input pixel adds ``(x - zero_point) * w`` to the int32
accumulator of the output pixels its kernel window covers, output ``(iy * stride - pad_top + ky, ...)``.
This kernel gathers the same terms per output pixel (integer sums do not depend on their order): output
``oy`` reads input ``iy = (oy + pad_top - ky) / stride`` for the taps ``ky`` where the division is exact, i.e.
``ky = (oy + pad_top) % stride + stride * j`` (its phase's taps: ``ceil(kernel / stride)`` of them, ``iy =
(oy + pad_top) // stride - j``), where ``ky`` is inside the kernel and ``iy`` inside the input: a stride-2 layer's
loops visit a quarter of the taps a loop over the whole kernel would test. ``padding`` is (top, left, bottom, right) in elements, bottom/right negative
for output rows/columns past the last input's reach; the output spatial size is
``(in - 1) * stride + kernel - top - bottom`` (TFLite's output_shape).
"""

from __future__ import annotations

from typing import Optional, Sequence

from tvm import te, tirx

from .requantize import OutputStage, accumulator_dtype, requantize


def conv2d_transpose_int8(
    data: te.Tensor, weight: te.Tensor, bias: Optional[te.Tensor], *, input_zero_point: int,
    output: OutputStage, strides: Sequence[int], padding: Sequence[int], dilation: Sequence[int],
    multiplier: Optional[te.Tensor] = None, shift: Optional[te.Tensor] = None,
) -> te.Tensor:
    """TRANSPOSE_CONV: data NHWC int8, weight OHWI int8 (TFLite's layout), bias int32[O] -> NHWC int8 (int16 data,
    int64 bias -> int16: 16x8).

    ``dilation`` must be (1, 1) (TFLite's TRANSPOSE_CONV has none); per-channel ``multiplier``/``shift``
    tensors, when given, replace those of ``output``.
    """
    if tuple(dilation) != (1, 1):
        raise ValueError(f"TRANSPOSE_CONV has no dilation, got {tuple(dilation)}")
    stage = output.per_channel(multiplier, shift)
    batch, in_h, in_w, _ = (int(d) for d in data.shape)
    cout, kh, kw, cin = (int(d) for d in weight.shape)
    out_h = (in_h - 1) * strides[0] + kh - padding[0] - padding[2]
    out_w = (in_w - 1) * strides[1] + kw - padding[1] - padding[3]
    # each output's phase taps: ceil(kernel / stride) per dimension
    ry = te.reduce_axis((0, -(-kh // strides[0])), "ry")
    rx = te.reduce_axis((0, -(-kw // strides[1])), "rx")
    rc = te.reduce_axis((0, cin), "rc")
    accumulator = accumulator_dtype(data, stage)

    def tap(b, y, x, o):
        ty, tx = y + padding[0], x + padding[1]
        ky, kx = tirx.floormod(ty, strides[0]) + strides[0] * ry, tirx.floormod(tx, strides[1]) + strides[1] * rx
        iy, ix = tirx.floordiv(ty, strides[0]) - ry, tirx.floordiv(tx, strides[1]) - rx
        reads = tirx.all(ky < kh, kx < kw, iy >= 0, iy < in_h, ix >= 0, ix < in_w)
        product = ((data[b, iy, ix, rc].astype(accumulator) - input_zero_point)
                   * weight[o, ky, kx, rc].astype(accumulator))
        return tirx.if_then_else(reads, product, tirx.const(0, accumulator))

    acc = te.compute((batch, out_h, out_w, cout), lambda b, y, x, o: te.sum(tap(b, y, x, o), axis=[ry, rx, rc]),
                     name="acc")
    return te.compute(acc.shape, lambda b, y, x, o: requantize(acc[b, y, x, o], o, stage, bias),
                      name="conv2d_transpose_int8")
