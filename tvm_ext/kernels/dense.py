"""TE definition of TFLite's int8 FULLY_CONNECTED (int32 accumulation) and its 16x8 variant (int16 data,
int64 accumulation and bias)."""

from __future__ import annotations

from typing import Optional

import numpy as np
from tvm import te, tirx

from .requantize import OutputStage, accumulator_dtype, requantize


PAIRED_TILE = 8
"""Output channels per tile of paired weights (`pair_weights`): four words per input, one per channel pair."""


def pair_weights(weight: np.ndarray) -> np.ndarray:
    """TFLite's int8 weight [O, K] (O a multiple of PAIRED_TILE) as int32 words [O / 8, K, 4]: the word
    [t, k, p] is the value a + 65536 * b of the weights a of channel 8t + 2p and b of channel 8t + 2p + 1 at
    input k (exact in int32: |a + 65536 b| < 2^23), so that one multiply of an input by the word computes both
    products (`backends/riscv/helpers/templates/mac_s8x8_pairs.h.in`). Twice the int8 weights' bytes."""
    units, depth = weight.shape
    channels = weight.astype(np.int32).reshape(units // PAIRED_TILE, PAIRED_TILE // 2, 2, depth)
    words = channels[:, :, 0, :] + 65536 * channels[:, :, 1, :]  # [O / 8, 4, K]
    return np.ascontiguousarray(words.transpose(0, 2, 1))


def paired_weight(weight: te.Tensor, o, *k) -> tirx.PrimExpr:
    """The int8 weight of output channel ``o`` at input ``k`` (one index, or a convolution's (ry, rx, rc) of
    `pair_weights`' words reshaped to [O / 8, KH, KW, I, 4]), as int32, from the words ``weight``: a word's low
    half sign-extended (a), else the rest shifted down (b = (word - a) / 65536, exact)."""
    word = weight[(o // PAIRED_TILE, *k, o % PAIRED_TILE // 2)]
    low = word.astype("int16").astype("int32")
    return tirx.Select(o % 2 == 0, low, (word - low) >> 16)


def fully_connected_int8(
    data: te.Tensor, weight: te.Tensor, bias: Optional[te.Tensor], *, input_zero_point: int,
    output: OutputStage, multiplier: Optional[te.Tensor] = None, shift: Optional[te.Tensor] = None,
    zero_point_in_bias: bool = False, paired_weights: bool = False,
) -> te.Tensor:
    """data (N, K) int8, weight (O, K) int8 as TFLite stores it, bias int32[O] -> (N, O) int8; int16 data
    with int64 bias -> int16 (16x8). With ``paired_weights`` (int8 data) the weight is `pair_weights`' int32
    words [O / 8, K, 4] of those values instead.

    With ``zero_point_in_bias`` the bias already holds ``- input_zero_point * sum_k weight[o, k]``
    (``fold_zero_point_into_bias``) and the kernel multiplies the raw int8 values."""
    output = output.per_channel(multiplier, shift)
    batch, depth = (int(d) for d in data.shape)
    units = int(weight.shape[0]) * (PAIRED_TILE if paired_weights else 1)
    accumulator = accumulator_dtype(data, output)
    k = te.reduce_axis((0, depth), "k")

    def factor(n, k):
        value = data[n, k].astype(accumulator)
        return value if zero_point_in_bias else value - input_zero_point

    acc = te.compute(
        (batch, units),
        lambda n, o: te.sum(
            factor(n, k) * (paired_weight(weight, o, k) if paired_weights else weight[o, k].astype(accumulator)),
            axis=k
        ),
        name="acc",
    )
    return te.compute((batch, units), lambda n, o: requantize(acc[n, o], o, output, bias), name="fully_connected_int8")
