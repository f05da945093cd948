"""TE definitions of TFLite's integer reductions: int8 and 16x8 MEAN and SUM (``reference_ops::QuantizedMeanOrSum``),
int8 REDUCE_MAX and REDUCE_MIN (``reference_ops::ReduceGeneric`` on the stored values)."""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from tvm import te
from tvm.ir.expr import Expr as PrimExpr

from .fixed_point import Rounding, clamp_to_type, largest_centered, multiply_by_constant_quantized_multiplier
from .pool import UNROLLED_TAPS
from .quant_params import ActivationRange

SUM_CHUNKS = (4, 3, 2)
"""The steps a MEAN's or SUM's innermost reduced axis may take, widest first (one that divides its extent)."""


@dataclass(frozen=True)
class _Reduction:
    """The reduced axes of ``data`` (a reduce axis each), the output shape, and the input index of an output index."""

    data: te.Tensor
    reduced: dict[int, te.IterVar]
    out_shape: list[int]
    keepdims: bool

    @classmethod
    def of(cls, data: te.Tensor, axes: Sequence[int], keepdims: bool) -> "_Reduction":
        shape = [int(d) for d in data.shape]
        reduced = {axis: te.reduce_axis((0, shape[axis]), f"r{axis}") for axis in sorted(axes)}
        out_shape = [1 if axis in reduced else extent
                     for axis, extent in enumerate(shape) if keepdims or axis not in reduced]
        return cls(data, reduced, out_shape, keepdims)

    @property
    def count(self) -> int:
        """How many input elements each output reduces."""
        count = 1
        for axis in self.reduced:
            count *= int(self.data.shape[axis])
        return count

    def read(self, out_index: Sequence[PrimExpr], at: Mapping[int, PrimExpr] | None = None) -> PrimExpr:
        """The input element at ``out_index`` and the reduce axes (a reduced axis in ``at`` at that index instead)."""
        kept = iter(out_index if not self.keepdims
                    else [i for axis, i in enumerate(out_index) if axis not in self.reduced])
        at = {**self.reduced, **(at or {})}
        return self.data[tuple(at[axis] if axis in self.reduced else next(kept)
                               for axis in range(len(self.data.shape)))]

    def unrolled_sum(self, out_index: Sequence[PrimExpr]) -> PrimExpr:
        """The int32 sum of the input elements ``out_index`` reduces, one term per element (no reduce axes)."""
        axes = list(self.reduced)
        terms = [self.read(out_index, dict(zip(axes, position))).astype("int32")
                 for position in itertools.product(*(range(int(self.data.shape[axis])) for axis in axes))]
        return functools.reduce(lambda total, term: total + term, terms)

    def chunked_sum(self, chunk: int, name: str) -> te.Tensor:
        """The int32 sums as a reduction whose innermost reduced axis steps ``chunk`` elements at a time (its extent
        a multiple of ``chunk``), each step's elements one expression: a loop of ``chunk`` loads and additions."""
        last = max(self.reduced)
        outer = te.reduce_axis((0, int(self.data.shape[last]) // chunk), f"r{last}_chunk")
        axes = [axis for key, axis in self.reduced.items() if key != last] + [outer]

        def total(*out_index: PrimExpr) -> PrimExpr:
            terms = [self.read(out_index, {last: outer * chunk + j}).astype("int32") for j in range(chunk)]
            return te.sum(functools.reduce(lambda a, b: a + b, terms), axis=axes)

        return te.compute(self.out_shape, total, name=name)

    def compute(self, reducer: Callable[..., PrimExpr], value: Callable[[PrimExpr], PrimExpr], name: str) -> te.Tensor:
        """``reducer`` (te.sum, te.max, te.min) of ``value`` of each reduced input element."""
        return te.compute(self.out_shape, lambda *i: reducer(value(self.read(i)), axis=list(self.reduced.values())),
                          name=name)


def mean_or_sum_int8(
    data: te.Tensor, *, axes: Sequence[int], keepdims: bool, input_zero_point: int, output_zero_point: int,
    multiplier: int, shift: int, rounding: Rounding,
) -> te.Tensor:
    """output = clamp(MBQM(sum(x over ``axes``) - input_zero_point * count, multiplier, shift) + zp_out), in the
    input's type (int8, or int16: TFLite Micro's QuantizedMeanOrSum<int16_t>, the same arithmetic).

    ``axes`` are distinct non-negative axes of ``data``; a reduced axis is kept with extent 1 when ``keepdims``.
    The sum is int32, as the reference's accumulator.
    """
    reduction = _Reduction.of(data, axes, keepdims)
    rescale = rescaled(reduction.count, input_zero_point, output_zero_point, multiplier, shift, rounding,
                        str(data.dtype))
    if reduction.count <= UNROLLED_TAPS:
        # a few terms: one expression per output, as a small pool window (no accumulator array stored and reloaded)
        return te.compute(reduction.out_shape, lambda *i: rescale(reduction.unrolled_sum(i)), name="mean_or_sum_int8")
    extent = int(data.shape[max(reduction.reduced)])
    chunk = next((k for k in SUM_CHUNKS if extent % k == 0), 1)
    # the innermost reduced axis a few elements per step where its extent allows (vit_tiny_16_int8's MEANs over
    # rows of 48 on cortex-m4f: four loads and additions per loop step, not one)
    total = reduction.chunked_sum(chunk, "reduce_sum") if chunk > 1 else \
        reduction.compute(te.sum, lambda value: value.astype("int32"), "reduce_sum")
    return te.compute(reduction.out_shape, lambda *i: rescale(total(*i)), name="mean_or_sum_int8")


def rescaled(count: int, input_zero_point: int, output_zero_point: int, multiplier: int, shift: int,
              rounding: Rounding, dtype: str) -> Callable[[PrimExpr], PrimExpr]:
    """MEAN's (SUM's) output of `count` values in `dtype` from their int32 sum (`mean_or_sum_int8`'s formula)."""
    limits = ActivationRange.of_dtype(dtype)
    # |sum - zero point * count| <= count * the largest centred value: the cheapest requantization helper whose
    # contract that bound meets (an int8 MEAN's SMMULR one: mobilenet_v2_050_64_int8's over 2x2 pixels of 1,280
    # channels on cortex-m4f, 40,336 -> 30,735 instructions)
    largest = count * largest_centered(dtype, input_zero_point)

    def rescale(total: PrimExpr) -> PrimExpr:
        centred = total - input_zero_point * count
        scaled = multiply_by_constant_quantized_multiplier(centred, multiplier, shift, rounding, largest)
        return clamp_to_type(scaled + output_zero_point, limits.low, limits.high, dtype)

    return rescale


def mean_of_sums(total: te.Tensor, *, shape: Sequence[int], count: int, input_zero_point: int,
                 output_zero_point: int, multiplier: int, shift: int, rounding: Rounding, dtype: str) -> te.Tensor:
    """A MEAN over the rows and columns of an NHWC tensor from its int32 sums `total` [1, 1, 1, C] (the band sums
    of tvm_ext.kernels.pool.row_sums, streamed by tvm_ext.transform.patch_prefix), as `mean_or_sum_int8` computes
    it from the whole input: output `shape` ([1, C], or [1, 1, 1, C] with keepdims) in `dtype`."""
    rescale = rescaled(count, input_zero_point, output_zero_point, multiplier, shift, rounding, dtype)
    return te.compute(tuple(shape), lambda *i: rescale(total[0, 0, 0, i[-1]]), name=f"mean_of_sums_{dtype}")


def max_or_min_int8(data: te.Tensor, *, axes: Sequence[int], keepdims: bool, maximum: bool) -> te.Tensor:
    """The largest (``maximum``) or smallest stored value over ``axes`` (as ``mean_or_sum_int8``'s): TFLite Micro's
    int8 REDUCE_MAX and REDUCE_MIN, which require the input's quantization for the output's."""
    reduction = _Reduction.of(data, axes, keepdims)
    return reduction.compute(te.max if maximum else te.min, lambda value: value,
                             "reduce_max_int8" if maximum else "reduce_min_int8")
