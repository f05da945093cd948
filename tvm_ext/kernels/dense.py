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


TILED_TILE = 8
"""Output channels per tile of tiled rows (`tile_rows`): one byte each per input."""


def tile_rows(weight: np.ndarray) -> np.ndarray:
    """TFLite's int8 weight [O, K] (O a multiple of TILED_TILE) as int8 [O / 8, K, 8]: tile t's weights at input k
    the eight bytes [t, k, :] of channels 8t .. 8t + 7, so that a tile's MAC reads each input's eight weights at
    constant offsets from one pointer stepping 8 bytes (`backends/riscv/helpers/templates/mac_s8x8_tiled.h.in`;
    TFLite's rows need seven channel strides of the row's length, in registers where a helper is shared). The same
    bytes as the int8 weights."""
    units, depth = weight.shape
    return np.ascontiguousarray(weight.reshape(units // TILED_TILE, TILED_TILE, depth).transpose(0, 2, 1))


def tiled_weight(weight: te.Tensor, o, k) -> tirx.PrimExpr:
    """The int8 weight of output channel ``o`` at input ``k`` as int32, from `tile_rows`' bytes ``weight``."""
    return weight[o // TILED_TILE, k, o % TILED_TILE].astype("int32")


STACKED_TILE = 4
"""Output channels per tile of stacked weights (`stack_rows`): two pairs of channels, 16 bytes per four inputs."""


def stack_rows(weight: np.ndarray) -> np.ndarray:
    """TFLite's int8 weight [O, K] (O a multiple of STACKED_TILE, K of 4; `stacks_rows`) as int8 [O / 4, K / 4, 16]:
    per tile t and group g of four inputs, the word 2p + j (bytes 4 (2p + j) ..) holds the halves of inputs
    4g + j and 4g + j + 2 of channels r = 4t + 2p and s = r + 1, each half the bytes lo = w[r, k] and
    hi = w[s, k] - (w[r, k] < 0): as an int16, w[r, k] + 256 w[s, k]
    (`backends/cortex_m/helpers/templates/stacked_mac.h.in` multiplies an input pair by two halves at once).
    The same bytes as the int8 weights."""
    units, depth = weight.shape
    w = weight.astype(np.int16).reshape(units // STACKED_TILE, 2, 2, depth // 4, 2, 2)  # [t, p, r/s, g, half, j]
    low, high = w[:, :, 0], w[:, :, 1]
    halves = np.stack([low, high - (low < 0)], axis=-1).astype(np.int8)  # [t, p, g, half, j, byte]
    return np.ascontiguousarray(halves.transpose(0, 2, 1, 4, 3, 5)).reshape(units // STACKED_TILE, depth // 4, 16)


def stacks_rows(weight: np.ndarray) -> bool:
    """Whether `stack_rows` holds ``weight`` [O, K] (int8) exactly: O a multiple of STACKED_TILE, K of 4, and every
    hi byte within int8 (no odd channel's -128 over an even channel's negative weight)."""
    if weight.dtype != np.int8 or weight.ndim != 2 or weight.shape[0] % STACKED_TILE or weight.shape[1] % 4:
        return False
    return not np.any((weight[1::2] == -128) & (weight[0::2] < 0))


def stacked_weight(weight: te.Tensor, o, k) -> tirx.PrimExpr:
    """The int8 weight of output channel ``o`` at input ``k`` as int32, from `stack_rows`' bytes ``weight``: the
    even channel's its lo byte, the odd channel's its hi byte plus the borrow (lo < 0)."""
    byte = (o % STACKED_TILE // 2 * 2 + k % 2) * 4 + k % 4 // 2 * 2  # the half's lo byte
    low = weight[o // STACKED_TILE, k // 4, byte].astype("int32")
    high = weight[o // STACKED_TILE, k // 4, byte + 1]
    zero, one = tirx.const(0, "int32"), tirx.const(1, "int32")
    return tirx.Select(o % 2 == 0, low, high.astype("int32") + tirx.Select(tirx.LT(low, zero), one, zero))


WIDE_GROUP = 8
"""Inputs per pass of the widened-rows MAC (`widen_rows`): a row's length a multiple of it."""


def widens_rows(weight: np.ndarray) -> bool:
    """Whether `widen_rows` takes ``weight`` [O, K] (int8): O a multiple of STACKED_TILE, K of WIDE_GROUP."""
    return (weight.dtype == np.int8 and weight.ndim == 2 and weight.shape[0] % STACKED_TILE == 0
            and weight.shape[1] % WIDE_GROUP == 0)


def widen_rows(weight: np.ndarray) -> np.ndarray:
    """TFLite's int8 weight [O, K] (`widens_rows`) as int16 [O / 4, K / 4, 16], the pairs SMLAD multiplies: per tile t
    of STACKED_TILE channels and group g of four inputs, the word 2c + j (halves 2 (2c + j) and 2 (2c + j) + 1) holds
    the weights of channel 4t + c at inputs 4g + j and 4g + j + 2
    (`backends/cortex_m/helpers/templates/wide_mac.h.in`). Twice the int8 weights' bytes."""
    units, depth = weight.shape
    w = weight.astype(np.int16).reshape(units // STACKED_TILE, STACKED_TILE, depth // 4, 2, 2)  # [t, c, g, h, j]
    return np.ascontiguousarray(w.transpose(0, 2, 1, 4, 3)).reshape(units // STACKED_TILE, depth // 4, 16)


def widened_weight(weight: te.Tensor, o, k) -> tirx.PrimExpr:
    """The weight of output channel ``o`` at input ``k`` as int32, from `widen_rows`' halves ``weight``."""
    half = (o % STACKED_TILE * 2 + k % 2) * 2 + k % 4 // 2
    return weight[o // STACKED_TILE, k // 4, half].astype("int32")


def fully_connected_int8(
    data: te.Tensor, weight: te.Tensor, bias: Optional[te.Tensor], *, input_zero_point: int,
    output: OutputStage, multiplier: Optional[te.Tensor] = None, shift: Optional[te.Tensor] = None,
    zero_point_in_bias: bool = False, paired_weights: bool = False, stacked_rows: bool = False,
    widened_rows: bool = False, tiled_rows: bool = False, units: Optional[int] = None,
) -> te.Tensor:
    """data (N, K) int8, weight (O, K) int8 as TFLite stores it, bias int32[O] -> (N, O) int8; int16 data
    with int64 bias -> int16 (16x8). With ``paired_weights`` (int8 data) the weight is `pair_weights`' int32
    words [O / 8, K, 4] of those values instead; with ``stacked_rows`` `stack_rows`' bytes [O / 4, K / 4, 16]; with
    ``widened_rows`` `widen_rows`' int16 [O / 4, K / 4, 16]; with ``tiled_rows`` `tile_rows`' int8 [O / 8, K, 8].

    With ``zero_point_in_bias`` the bias already holds ``- input_zero_point * sum_k weight[o, k]``
    (``fold_zero_point_into_bias``) and the kernel multiplies the raw int8 values.

    With ``units`` the output has that many channels, fewer than the weight's rows: the rows past them are zeros
    that pad the channels to whole tiles of a backend's MAC helper (``LoweringContext.dense_unit_tile``); their
    sums are computed and never read.

    ``data`` may also be one NHWC pixel (1, 1, 1, K), the output then (1, 1, 1, units): a CONV_2D whose 1x1
    window reads its whole 1x1 input (a classifier head over a pooled image) is this layer over that pixel."""
    output = output.per_channel(multiplier, shift)
    *lead, depth = (int(d) for d in data.shape)
    rows = int(weight.shape[0]) * (PAIRED_TILE if paired_weights else TILED_TILE if tiled_rows else
                                   STACKED_TILE if stacked_rows or widened_rows else 1)
    units = rows if units is None else units
    accumulator = accumulator_dtype(data, output)
    k = te.reduce_axis((0, depth), "k")

    def weight_at(o, k):
        if paired_weights:
            return paired_weight(weight, o, k)
        if widened_rows:
            return widened_weight(weight, o, k)
        if tiled_rows:
            return tiled_weight(weight, o, k)
        return stacked_weight(weight, o, k) if stacked_rows else weight[o, k].astype(accumulator)

    def factor(row, k):
        value = data[(*row, k)].astype(accumulator)
        return value if zero_point_in_bias else value - input_zero_point

    def row_sum(*index):  # the row's leading indices, then the output channel
        return te.sum(factor(index[:-1], k) * weight_at(index[-1], k), axis=k)

    def requantized(*index):
        return requantize(acc[index], index[-1], output, bias)

    if len(lead) == 1:
        acc = te.compute((*lead, rows), lambda n, o: row_sum(n, o), name="acc")
        return te.compute((*lead, units), lambda n, o: requantized(n, o), name="fully_connected_int8")
    acc = te.compute((*lead, rows), lambda b, y, x, o: row_sum(b, y, x, o), name="acc")
    return te.compute((*lead, units), lambda b, y, x, o: requantized(b, y, x, o), name="fully_connected_int8")


def dense_rows(data: te.Tensor, weight: te.Tensor, *before: te.Tensor, offset: int,
               input_zero_point: int) -> te.Tensor:
    """A band of rows' part of an int8 FULLY_CONNECTED over a flattened NHWC tensor: int32 [1, O], the sums
    over the band `data` [1, h, w, C] (int8) of (value - input_zero_point) times the weight [O, K] (int8, as
    TFLite stores it) at input offset + (y * w + x) * C + c (the band's place in the flattened tensor), plus
    the sums of the bands before (`before`: one such tensor, or none for the first band). The bands' sums
    add up to the layer's accumulators exactly (int32 arithmetic, any order); `requantized_sums` finishes
    them. tvm_ext.transform.patch_prefix streams a FULLY_CONNECTED's input through it band by band."""
    _, h, w, channels = (int(d) for d in data.shape)
    units = int(weight.shape[0])
    ry, rx, rc = (te.reduce_axis((0, n), name) for n, name in ((h, "ry"), (w, "rx"), (channels, "rc")))
    band = te.compute(
        (1, units),
        lambda n, o: te.sum((data[n, ry, rx, rc].astype("int32") - input_zero_point)
                            * weight[o, offset + (ry * w + rx) * channels + rc].astype("int32"), axis=[ry, rx, rc]),
        name="band_dot")
    if not before:
        return band
    return te.compute((1, units), lambda n, o: before[0][n, o] + band[n, o], name="running_dot")


def requantized_sums(acc: te.Tensor, bias: Optional[te.Tensor] = None, multiplier: Optional[te.Tensor] = None,
                     shift: Optional[te.Tensor] = None, *, output: OutputStage) -> te.Tensor:
    """The int8 FULLY_CONNECTED's output [1, O] from its int32 accumulators `acc` [1, O] (`dense_rows` of the
    last band): plus the bias, requantized by `output` (per-channel `multiplier`/`shift` tensors when given), as
    fully_connected_int8 finishes its own sums."""
    output = output.per_channel(multiplier, shift)
    return te.compute(tuple(int(d) for d in acc.shape), lambda n, o: requantize(acc[n, o], o, output, bias),
                      name="fully_connected_of_sums")
