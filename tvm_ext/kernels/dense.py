"""TE definition of TFLite's int8 FULLY_CONNECTED (int32 accumulation) and its 16x8 variant (int16 data,
int64 accumulation and bias)."""

from __future__ import annotations

from typing import Optional

from tvm import te

from .requantize import OutputStage, accumulator_dtype, requantize


def fully_connected_int8(
    data: te.Tensor, weight: te.Tensor, bias: Optional[te.Tensor], *, input_zero_point: int,
    output: OutputStage, multiplier: Optional[te.Tensor] = None, shift: Optional[te.Tensor] = None,
    zero_point_in_bias: bool = False,
) -> te.Tensor:
    """data (N, K) int8, weight (O, K) int8 as TFLite stores it, bias int32[O] -> (N, O) int8; int16 data
    with int64 bias -> int16 (16x8).

    With ``zero_point_in_bias`` the bias already holds ``- input_zero_point * sum_k weight[o, k]``
    (``fold_zero_point_into_bias``) and the kernel multiplies the raw int8 values."""
    output = output.per_channel(multiplier, shift)
    batch, depth = (int(d) for d in data.shape)
    units = int(weight.shape[0])
    accumulator = accumulator_dtype(data, output)
    k = te.reduce_axis((0, depth), "k")

    def factor(n, k):
        value = data[n, k].astype(accumulator)
        return value if zero_point_in_bias else value - input_zero_point

    acc = te.compute(
        (batch, units),
        lambda n, o: te.sum(
            factor(n, k) * weight[o, k].astype(accumulator), axis=k
        ),
        name="acc",
    )
    return te.compute((batch, units), lambda n, o: requantize(acc[n, o], o, output, bias), name="fully_connected_int8")
