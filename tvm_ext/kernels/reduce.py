"""TE definition of TFLite's int8 and 16x8 MEAN and SUM (``reference_ops::QuantizedMeanOrSum``)."""

from __future__ import annotations

from typing import Sequence

from tvm import te

from .fixed_point import Rounding, clamp_to_type, multiply_by_quantized_multiplier
from .quant_params import ActivationRange


def mean_or_sum_int8(
    data: te.Tensor, *, axes: Sequence[int], keepdims: bool, input_zero_point: int, output_zero_point: int,
    multiplier: int, shift: int, rounding: Rounding,
) -> te.Tensor:
    """output = clamp(MBQM(sum(x over ``axes``) - input_zero_point * count, multiplier, shift) + zp_out), in the
    input's type (int8, or int16: TFLite Micro's QuantizedMeanOrSum<int16_t>, the same arithmetic).

    ``axes`` are distinct non-negative axes of ``data``; a reduced axis is kept with extent 1 when ``keepdims``.
    The sum is int32, as the reference's accumulator.
    """
    shape = [int(d) for d in data.shape]
    reduced = {axis: te.reduce_axis((0, shape[axis]), f"r{axis}") for axis in sorted(axes)}
    count = 1
    for axis in reduced:
        count *= shape[axis]
    out_shape = [1 if axis in reduced else extent
                 for axis, extent in enumerate(shape) if keepdims or axis not in reduced]

    def input_index(out_index):
        kept = iter(out_index if not keepdims else [i for axis, i in enumerate(out_index) if axis not in reduced])
        return [reduced[axis] if axis in reduced else next(kept) for axis in range(len(shape))]

    total = te.compute(out_shape, lambda *i: te.sum(data[tuple(input_index(i))].astype("int32"),
                                                    axis=list(reduced.values())), name="reduce_sum")

    def rescale(*i):
        centred = total(*i) - input_zero_point * count
        scaled = multiply_by_quantized_multiplier(centred, multiplier, shift, rounding)
        return clamp_to_type(scaled + output_zero_point, limits.low, limits.high, str(data.dtype))

    limits = ActivationRange.of_dtype(str(data.dtype))
    return te.compute(out_shape, rescale, name="mean_or_sum_int8")
