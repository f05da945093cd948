"""int8 AVERAGE_POOL_2D and MEAN / SUM as window sums four channels per word load, through a backend's word ops (on
DSP cores: `backends.cortex_m.schedules.pool_sums`, SXTAB16), the kernels the int8 lowering writes where the backend
gives its ops (`backends.backend.KernelSchedules.int8_window_sums`).

The generic kernels (`tvm_ext.kernels.average_pool2d_integer`, `mean_or_sum_int8`) load and add a byte per tap:
about 3 instructions per input byte on cortex-m4f for a global pool or a MEAN of more than UNROLLED_TAPS taps, whose
generic kernel is a loop. Here a run of channels is summed in blocks of four: each tap one word load
(the backend's word op) added to two pairs of 16-bit halves (its pairs ops: bytes 0 and 2, bytes 1 and 3; on DSP
cores SXTAB16, `backends.cortex_m.helpers.pool_sums_c`), exact while a window has at most
PAIR_TAPS taps, in loops over the window's rows and over its columns UNROLLED_STEP at a time; then one loop over a
block's four outputs takes each from the low half of the first word and rotates the pair (the second word, then
both high halves). A MEAN's run of channels over more than PAIR_TAPS taps sums them a chunk of at most PAIR_TAPS
at a time (`_Window.chunked`), each chunk's halves added to four int32 sums. A MEAN's output is rescaled by the generic kernel's own arithmetic
(`tvm_ext.kernels.reduce.rescaled`), an average pool's rounded as a floor by an unsigned division
(`rounded_average`, equal to the generic `tvm_ext.kernels.pool.rounded_quotient` on every sum of int8 taps), so the
outputs are the generic kernels' to the bit. The channels after the last block of four add a byte per tap. A window
of at most GENERIC_TAPS taps keeps the generic kernel (one expression of its taps per output: about as fast, and
less code), except an average pool's of 2, 4 or 8 taps over the full int8 range, whose blocks' four averages the
backend stores at once (`average_pool_words`), and a MEAN's (SUM's) over runs of whole blocks where its outputs
rescaled from their halves where they lie pay their code (`LaneScale`, `scale_pays`: the halves started at the
centring, each output one SMLAWB or SMLAWT and one SSAT).

An unpadded int8 average pool stepping one column (its windows overlap along the row) takes column sums instead
(`average_pool_columns`): per output row, its window's rows summed once for every element of the input row, then each
output element adds its window's columns; the other pools and MEAN / SUM take the runs.

The runs, by shape (each kernel gives None where it does not fit: the generic kernel then):

- an unpadded int8 average pool: per output row, the run of all its pixels' channels where the pool steps one
  column (output x's channel c is element x * depth + c of the run, its taps a pixel apart: a stride-1 pool of
  three channels still takes whole words), else per output pixel its channels; a window whose rows follow each
  other in memory (a global pool) is one row of taps;
- an int8 MEAN or SUM whose reduced axes are adjacent once axes of extent 1 are dropped: per index of the axes
  before them, the run of the axes after them (the channels) over the reduced elements; with no axis after them
  (a reduction over the innermost axes) the elements themselves four a word, the lanes added at the end.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from tvm import te, tirx

from backends.code_price import INSTRUCTIONS_PER_BYTE

from ..tir.extern_stage import element_address, extern_from_zero, row_major_indices
from .fixed_point import Rounding, clamp_to_type
from .pool import UNROLLED_TAPS
from .quant_params import ActivationRange
from .reduce import rescaled

WordOps = tuple[str, str, str, str, str, str, str]
"""The backend's ops of the sums (`backends.backend.KernelSchedules.int8_window_sums`), by name: word(p), the int32
of the four int8 p[0..3] (p[0] lowest; a pointer argument: its helper's access record names those four); pairs(acc,
word), acc's two 16-bit halves plus bytes 0 and 2 of word sign-extended, each half modulo 2^16 (SXTAB16);
pairs_ror8(acc, word), the same with bytes 1 and 3; store_halves(p, even, odd), the int16 p[0..3] = even's low half,
odd's, even's high half, odd's (a block's four sums in channel order; its record names p[0..3]); store_average(p,
even, odd, shift), the int8 p[0..3] = TFLite's averages of those halves as sums of 2^shift taps (1 <= shift <= 8);
scale_low(pairs, multiplier, addend) and scale_high(...), floor(multiplier * h / 2^16) + addend of pairs' low (high)
16-bit half h, signed (SMLAWB, SMLAWT)."""

PAIR_TAPS = 256
"""The most taps a window's 16-bit halves hold exactly (256 * -128 = -32768); a larger window keeps the generic
kernel."""
GENERIC_TAPS = UNROLLED_TAPS
"""A window of at most this many taps keeps the generic kernel, one expression of its taps per output: as fast or
nearly (cortex-m4f: vww_96_int8's 3x3 global pool of 256 channels 7,179 -> 5,774 instructions, mobilenet_v2's MEAN of
2x2 pixels slower) and smaller (that pool's kernel 104 B, 136 B here; every bundle's code stays within main's)."""
UNROLLED_STEP = 4
"""The most taps of a row one step of its loop takes (`_step`)."""
CONSECUTIVE_STEP = 1
"""The words one step of a reduction over the innermost axes takes: its kernel's code within the generic one's
(cortex-m4f, gcc -O2: vit_tiny_16_int8's seven MEANs 744 B of code, 792 B generic; 816 B with steps of two)."""


@dataclass(frozen=True)
class _Window:
    """The taps of a run's element i: src[start + r * row_stride + c * col_stride + i], r < rows, c < cols."""

    rows: int
    row_stride: int
    cols: int
    col_stride: int

    def collapsed(self) -> "_Window":
        """The same taps as one row where the rows follow each other at a column's stride (a global pool)."""
        if self.rows > 1 and self.row_stride == self.cols * self.col_stride:
            return _Window(1, 0, self.rows * self.cols, self.col_stride)
        return self

    @property
    def taps(self) -> int:
        return self.rows * self.cols

    def chunked(self) -> Optional["_Window"]:
        """The same taps of one row as rows of at most PAIR_TAPS taps (the row's largest divisor within it), one
        pair of 16-bit sums each; None for a window of more rows, or a row whose divisors within PAIR_TAPS are 1."""
        chunk = next((taps for taps in range(min(self.cols, PAIR_TAPS), 1, -1) if self.cols % taps == 0), 1)
        if self.rows != 1 or chunk == 1:
            return None
        return _Window(self.cols // chunk, chunk * self.col_stride, chunk, self.col_stride)


def _step(cols: int, widest: int) -> int:
    """The columns one step of a row's loop takes: all of a row of at most `widest`, else the largest of widest..2
    dividing the row (no rest), else `widest`."""
    if cols <= widest:
        return cols
    return next((step for step in range(widest, 1, -1) if cols % step == 0), widest)


def _seq(stmts: list[tirx.Stmt]) -> tirx.Stmt:
    """The statements in order (one alone: TVM refuses a sequence of one)."""
    return stmts[0] if len(stmts) == 1 else tirx.SeqStmt(stmts)


class _Builder:
    """The statements of one extern kernel's runs over its input buffer `src` (index expressions in `index`)."""

    def __init__(self, src: tirx.Buffer, out: tirx.Buffer, index: str, ops: WordOps) -> None:
        self.src, self.out, self.index = src, out, index
        self.word_op, self.pairs_ops, self.store_op, self.average_op = ops[0], ops[1:3], ops[3], ops[4]
        self.scale_ops = ops[5:7]
        self.names = iter(range(1 << 30))

    def const(self, value: int) -> tirx.PrimExpr:
        return tirx.const(value, self.index)

    def var(self, name: str, dtype: str) -> tirx.Var:
        return tirx.Var(f"{name}{next(self.names)}", dtype)

    def loop(self, name: str, extent: int, body: Callable[[tirx.PrimExpr], tirx.Stmt]) -> tirx.Stmt:
        """``for v in [0, extent)`` of ``body(v)`` (the body at 0 alone for one step)."""
        if extent == 1:
            return body(self.const(0))
        var = self.var(name, self.index)
        return tirx.For(var, self.const(0), self.const(extent), tirx.ForKind.SERIAL, body(var))

    def store(self, offset: tirx.PrimExpr, value: tirx.PrimExpr) -> tirx.Stmt:
        return tirx.BufferStore(self.out, value, row_major_indices(self.out, offset))

    def _taps(self, start: tirx.PrimExpr, window: _Window, add: Callable[[list[tirx.PrimExpr]], list[tirx.Stmt]],
              widest: int = UNROLLED_STEP) -> tirx.Stmt:
        """``add(offsets)`` over the window's tap offsets from `start`, in loops over its rows and over its columns a
        step of `_step` columns at a time (then the row's rest): one copy of a step's code."""
        step = _step(window.cols, widest)

        def row(r: tirx.PrimExpr) -> tirx.Stmt:
            first = start + r * self.const(window.row_stride)
            steps = [self.loop("c", window.cols // step, lambda c: _seq(add([
                first + (c * self.const(step) + self.const(j)) * self.const(window.col_stride)
                for j in range(step)])))]
            rest = [first + self.const(c * window.col_stride) for c in range(window.cols - window.cols % step,
                                                                              window.cols)]
            return _seq([*steps, *(add(rest) if rest else [])])

        return self.loop("r", window.rows, row)

    def block_sums(self, start: tirx.PrimExpr, window: _Window, widest: int = UNROLLED_STEP, lift: int = 0
                   ) -> tuple[list[tirx.Stmt], tirx.Buffer]:
        """The statements summing the four channels at `start` (element k of a word: channel k) over the window into
        a local pair of words: one word per tap, SXTAB16 of bytes 0 and 2 into the first's halves (channels 0, 2),
        of bytes 1 and 3 into the second's (channels 1, 3), each half starting at `lift` (modulo 2^16); and that
        pair."""
        pairs = tirx.decl_buffer((2,), "int32", name="pairs", scope="local")
        half = lift & 0xFFFF
        zero = tirx.const((half | half << 16) - (1 << 32 if half & 0x8000 else 0), "int32")

        def add(offsets: list[tirx.PrimExpr]) -> list[tirx.Stmt]:
            words = [(self.var("w", "int32"), tirx.call_intrin("int32", self.word_op, element_address(self.src, at)))
                     for at in offsets]
            folded = [tirx.BufferStore(pairs, functools.reduce(
                lambda total, word: tirx.call_intrin("int32", op, total, word[0]), words,
                tirx.BufferLoad(pairs, [self.const(k)])), [self.const(k)])
                for k, op in enumerate(self.pairs_ops)]
            return [*(tirx.Bind(var, value) for var, value in words), *folded]

        return [tirx.AllocBuffer(pairs), tirx.BufferStore(pairs, zero, [self.const(0)]),
                tirx.BufferStore(pairs, zero, [self.const(1)]), self._taps(start, window, add, widest)], pairs

    def byte_sum(self, start: tirx.PrimExpr, window: _Window, total: Callable[[tirx.PrimExpr], tirx.Stmt]) -> tirx.Stmt:
        """The int32 sum of the one channel at `start` over the window, a byte per tap, handed to `total`."""
        acc = tirx.decl_buffer((1,), "int32", name="sum", scope="local")
        at = [self.const(0)]
        load = lambda offset: tirx.Cast("int32", tirx.BufferLoad(self.src, row_major_indices(  # noqa: E731
            self.src, offset)))
        add = lambda offsets: [tirx.BufferStore(acc, functools.reduce(  # noqa: E731
            lambda a, b: a + b, [load(o) for o in offsets], tirx.BufferLoad(acc, at)), at)]
        return _seq([tirx.AllocBuffer(acc), tirx.BufferStore(acc, tirx.const(0, "int32"), at),
                     self._taps(start, window, add), total(tirx.BufferLoad(acc, at))])

    def run(self, out_start: tirx.PrimExpr, src_start: tirx.PrimExpr, channels: int, window: _Window,
            output: Callable[[tirx.PrimExpr], tirx.PrimExpr], average_shift: Optional[int] = None,
            scale: Optional["LaneScale"] = None) -> tirx.Stmt:
        """out[out_start + i] = output(sum of channel i over the window from src_start) for i < channels: blocks of
        four channels, each block's outputs one loop over its pair of words (the low half of the first, then the
        pair rotated: the second, then both high halves), or with `average_shift` (`output` TFLite's average of
        2^average_shift taps, full range) one store of the four averages (the backend's store_average), or with
        `scale` (a MEAN's output, `LaneScale`) the four outputs one after another, each from its half where it lies;
        then a loop over the rest, a byte per tap: one copy of each form's code."""
        def block(j: tirx.PrimExpr) -> tirx.Stmt:
            first = j * self.const(4)
            if window.taps > PAIR_TAPS:
                return self.chunked_block(out_start + first, src_start + first, window, output)
            sums, pairs = self.block_sums(src_start + first, window, lift=0 if scale is None else scale.lift)
            at = [self.const(0)], [self.const(1)]
            if scale is not None:
                return _seq([*sums, *(self.store(out_start + first + self.const(k), scale.output(
                    tirx.BufferLoad(pairs, at[k % 2]), k >= 2, self.scale_ops[k >= 2])) for k in range(4))])
            if average_shift is not None:
                return _seq([*sums, tirx.Evaluate(tirx.call_intrin(
                    "int32", self.average_op, element_address(self.out, out_start + first),
                    tirx.BufferLoad(pairs, at[0]), tirx.BufferLoad(pairs, at[1]), tirx.const(average_shift, "int32")))])

            def lane(k: tirx.PrimExpr) -> tirx.Stmt:
                low = tirx.Cast("int32", tirx.Cast("int16", tirx.BufferLoad(pairs, at[0])))
                high = self.var("high", "int32")
                return _seq([self.store(out_start + first + k, output(low)),
                             tirx.Bind(high, tirx.shift_right(tirx.BufferLoad(pairs, at[0]), tirx.const(16, "int32"))),
                             tirx.BufferStore(pairs, tirx.BufferLoad(pairs, at[1]), at[0]),
                             tirx.BufferStore(pairs, high, at[1])])

            return _seq([*sums, self.loop("k", 4, lane)])

        def single(i: tirx.PrimExpr) -> tirx.Stmt:
            at = self.const(channels - channels % 4) + i
            return self.byte_sum(src_start + at, window, lambda total: self.store(out_start + at, output(total)))

        stmts = [self.loop("j", channels // 4, block)] if channels >= 4 else []
        stmts += [self.loop("i", channels % 4, single)] if channels % 4 else []
        return _seq(stmts)

    def chunked_block(self, out_at: tirx.PrimExpr, src_at: tirx.PrimExpr, window: _Window,
                      output: Callable[[tirx.PrimExpr], tirx.PrimExpr]) -> tirx.Stmt:
        """out[out_at + k] = output(sum of channel k over the window from src_at) for k < 4, the window of more
        than PAIR_TAPS taps summed a chunk (`_Window.chunked`) at a time into its pair of words, each chunk's four
        halves then added to four int32 sums (channel k's in element k), a loop over the chunks; then a loop over
        the four outputs."""
        chunks = window.chunked()
        assert chunks is not None, window
        sums = tirx.decl_buffer((4,), "int32", name="sums", scope="local")
        c = self.const

        def chunk(r: tirx.PrimExpr) -> tirx.Stmt:
            stmts, pairs = self.block_sums(src_at + r * c(chunks.row_stride), _Window(1, 0, chunks.cols,
                                                                                        chunks.col_stride))
            halves = [tirx.BufferLoad(pairs, [c(k)]) for k in (0, 1)]
            lanes = [*(tirx.Cast("int32", tirx.Cast("int16", half)) for half in halves),
                     *(tirx.shift_right(half, tirx.const(16, "int32")) for half in halves)]
            return _seq([*stmts, *(tirx.BufferStore(sums, tirx.BufferLoad(sums, [c(k)]) + lane, [c(k)])
                                   for k, lane in enumerate(lanes))])

        return _seq([tirx.AllocBuffer(sums), *(tirx.BufferStore(sums, tirx.const(0, "int32"), [c(k)]) for k in range(4)),
                     self.loop("r", chunks.rows, chunk),
                     self.loop("k", 4, lambda k: self.store(out_at + k, output(tirx.BufferLoad(sums, [k]))))])

    def consecutive(self, out_at: tirx.PrimExpr, src_start: tirx.PrimExpr, count: int,
                    output: Callable[[tirx.PrimExpr], tirx.PrimExpr]) -> tirx.Stmt:
        """out[out_at] = output(sum of the `count` consecutive elements from src_start): four a word (the four lanes
        added), then the rest a byte each."""
        words, rest = divmod(count, 4)
        tail = _Window(1, 0, rest, 1)
        if words == 0:
            return self.byte_sum(src_start, tail, lambda total: self.store(out_at, output(total)))
        sums, pairs = self.block_sums(src_start, _Window(1, 0, words, 4), CONSECUTIVE_STEP)
        halves = [tirx.BufferLoad(pairs, [self.const(k)]) for k in (0, 1)]
        total = functools.reduce(lambda a, b: a + b, [
            *(tirx.Cast("int32", tirx.Cast("int16", half)) for half in halves),
            *(tirx.shift_right(half, tirx.const(16, "int32")) for half in halves)])
        if not rest:
            return _seq([*sums, self.store(out_at, output(total))])
        return _seq([*sums, self.byte_sum(src_start + self.const(4 * words), tail,
                                          lambda bytes_: self.store(out_at, output(total + bytes_)))])


@dataclass(frozen=True)
class LaneScale:
    """A MEAN's int8 output from a block's 16-bit half h where it lies (`lane_scale`): the half started at `lift`
    (-input zero point x taps), so h is the centred sum x; the output is clamp((floor(multiplier * x / 2^16) +
    addend - [x < 0] * 2^15 where `signed`) >> shift) to int8, the scale op one SMLAWB or SMLAWT."""

    lift: int
    multiplier: int
    addend: int
    shift: int
    signed: bool

    def output(self, pairs: tirx.PrimExpr, high: bool, op: str) -> tirx.PrimExpr:
        """The output of `pairs`' low (`high`: high) half, through the backend's scale op `op`."""
        scaled = tirx.call_intrin("int32", op, pairs, tirx.const(self.multiplier, "int32"),
                                  tirx.const(self.addend, "int32"))
        if self.signed:  # the half's sign bit, as 2^15
            sign = tirx.shift_right(pairs, tirx.const(16, "int32")) if high else pairs
            scaled = scaled - tirx.bitwise_and(sign, tirx.const(1 << 15, "int32"))
        return clamp_to_type(tirx.shift_right(scaled, tirx.const(self.shift, "int32")), -128, 127, "int8")


def lane_scale(count: int, input_zero_point: int, output_zero_point: int, multiplier: int, shift: int,
               rounding: Rounding) -> Optional[LaneScale]:
    """TFLite's int8 MEAN output of the sum of `count` int8 taps (`tvm_ext.kernels.reduce.rescaled`: the centred
    sum x = sum - input_zero_point * count, MultiplyByQuantizedMultiplier(x, multiplier, shift) with DOUBLE
    rounding, plus output_zero_point, clamped) as a `LaneScale`, or None where its proof's bounds fail (SINGLE
    rounding, a left shift, |x| >= 2^15, a total shift over 31, a sum outside int32). The proof, for e = -shift:
    SaturatingRoundingDoublingHighMul(x, m) = floor((x * m + 2^30) / 2^31) = floor((t + 2^14) / 2^15) with t =
    floor(x * m / 2^16) (its low 16 bits add less than one unit to t + 2^14, an integer); RoundingDivideByPOT(h, e)
    = floor((h + 2^(e-1) - [h < 0]) / 2^e) for e >= 1 (h itself for e = 0), and [h < 0] may be read as [x < 0] (they
    differ only where h = 0, whose rounding is 0 either way); nested floors of integers by powers of two are one
    floor, so the output before its clamp is floor((t + 2^14 + (2^(e-1) + zero point * 2^e - [x < 0]) * 2^15) /
    2^(15 + e)). Tested on every sum against the generic expression (tests/tvm_ext/kernels/test_window_sums.py)."""
    low, high = (-128 - input_zero_point) * count, (127 - input_zero_point) * count
    right = -shift
    if rounding is not Rounding.DOUBLE or right < 0 or multiplier < 0 or max(-low, high) >= 1 << 15 or right > 16:
        return None
    rounded = output_zero_point if right == 0 else (1 << (right - 1)) + (output_zero_point << right)
    addend = (1 << 14) + (rounded << 15)
    if max(-low, high) * multiplier // (1 << 16) + 1 + abs(addend) + (1 << 15) >= 1 << 31:
        return None
    return LaneScale(-input_zero_point * count, multiplier, addend, 15 + right, right > 0 and low < 0)


SCALE_BLOCK_INSTRUCTIONS = (3, 16)
"""A block of four MEAN outputs over `count` taps as scaled lanes, instructions (a, b): a * count + b, a word and two
SXTAB16 a tap, then per output one SMLAWB / SMLAWT, one SSAT (which takes the shift) and a byte store, and the loop;
two more per output where the centred sum may be negative (its sign bit taken off). The generic kernel's output
(GENERIC_INSTRUCTIONS) a byte load and an add a tap. Measured on cortex-m4f (gcc 12.2 -O2):
mobilenet_v2_050_64_int8's MEAN of 2x2 pixels of 1,280 channels 28 instructions a block (8,971 for the call),
generic 14 an output (17,932)."""
GENERIC_INSTRUCTIONS = (2, 6)
"""The generic kernel's output of a MEAN over `count` taps, instructions (a, b): a * count + b (above)."""
SCALE_CODE_BYTES = (6, 32, 32)
"""The code the scaled lanes add against the generic kernel, bytes (a, b, c): a * count + b, c more where the
centred sum may be negative: mobilenet_v2_050_64_int8's MEAN kernel 68 -> 124 B over 4 taps (cortex-m4f)."""


def scale_pays(outputs: int, count: int, signed: bool) -> bool:
    """Whether a MEAN of `outputs` outputs (per call) over `count` taps saves, as scaled lanes (`LaneScale`), what
    their code costs at the backends' one price of code (SCALE_BLOCK_INSTRUCTIONS, GENERIC_INSTRUCTIONS,
    SCALE_CODE_BYTES, `backends.code_price.INSTRUCTIONS_PER_BYTE`): mobilenet_v2_050_64_int8's MEAN of 1,280
    channels over 2x2 pixels pays (8,961 instructions for 56 B), a MEAN of 64 channels does not."""
    generic = GENERIC_INSTRUCTIONS[0] * count + GENERIC_INSTRUCTIONS[1]
    scaled = (SCALE_BLOCK_INSTRUCTIONS[0] * count + SCALE_BLOCK_INSTRUCTIONS[1]) / 4 + (2 if signed else 0)
    code = SCALE_CODE_BYTES[0] * count + SCALE_CODE_BYTES[1] + (SCALE_CODE_BYTES[2] if signed else 0)
    return outputs * (generic - scaled) >= code * INSTRUCTIONS_PER_BYTE


AVERAGE_BIAS = 129
"""Multiples of the count added before the unsigned division of `rounded_average` (its sum is at least
-128 * count - count / 2 - 1)."""


def rounded_average(total: tirx.PrimExpr, *, count: int, activation: ActivationRange) -> tirx.PrimExpr:
    """TFLite's int8 average of the int32 window sum `total` of `count` int8 taps (`tvm_ext.kernels.pool.
    rounded_quotient`: the quotient rounded half away from zero, clamped to `activation`), as a floor: no tie rounds
    differently where `count` is odd, so it is floor((total + count / 2) / count); where it is even, a negative
    sum's tie must round down, floor((total + count / 2 - 1) / count), and subtracting 1 moves no other sum's floor.
    The floor as an unsigned division of the sum lifted by AVERAGE_BIAS counts (a multiply-high by the constant's
    reciprocal, where the generic quotient also tests the sign and rounds the signed quotient). Checked, compiled,
    against TFLite's rounding for every count up to PAIR_TAPS and every sum of int8 taps (tests/tvm_ext/kernels/
    test_window_sums.py). The average of int8 values is an int8 value: clamped only to a narrower activation."""
    lifted = total + tirx.const(count // 2 + AVERAGE_BIAS * count, "int32")
    if count % 2 == 0:
        lifted = lifted + tirx.shift_right(total, tirx.const(31, "int32"))
    quotient = tirx.Cast("int32", tirx.truncdiv(tirx.Cast("uint32", lifted), tirx.const(count, "uint32")))
    average = quotient - tirx.const(AVERAGE_BIAS, "int32")
    if (activation.low, activation.high) == (-128, 127):
        return tirx.Cast("int8", average)
    return clamp_to_type(average, activation.low, activation.high, "int8")


def average_pool_words(data: te.Tensor, *, ops: WordOps, pool: Sequence[int], strides: Sequence[int],
                       padding: Sequence[int], activation: ActivationRange) -> Optional[te.Tensor]:
    """TFLite's int8 AVERAGE_POOL_2D of the NHWC `data` (arguments as `tvm_ext.kernels.average_pool2d_integer`'s)
    as window sums four channels a word (module docstring), or None where they do not fit: data not int8, a padded
    pool (its windows' counts vary), or a window of more than PAIR_TAPS taps. A window of 2, 4 or 8 taps (2^k, at
    most GENERIC_TAPS) over the full int8 range, its runs at least a block long, takes them too, each block's four
    averages stored at once (`average_shift`: the backend's store_average, some 10 instructions for four outputs
    where the generic kernel's division takes about 12 each; cortex-m4f: densenet_bc_32's 2x2 pools of 36 and 42
    channels 4.3 -> 1.9 instructions per input byte). A larger window keeps its lanes' outputs: there the packed
    store saved less than its code (pretrainedResnet_quant's 8x8 pool: 512 instructions for 8 B)."""
    count = pool[0] * pool[1]
    batches, height, width, depth = (int(d) for d in data.shape)
    out_h = (height - pool[0]) // strides[0] + 1
    out_w = (width - pool[1]) // strides[1] + 1
    run_elements = out_w * depth if strides[1] == 1 else depth
    average_shift = count.bit_length() - 1 if 2 <= count <= GENERIC_TAPS and count & (count - 1) == 0 and (
        activation.low, activation.high) == (-128, 127) and run_elements >= 4 else None
    if str(data.dtype) != "int8" or any(padding) or count > PAIR_TAPS or (
            count <= GENERIC_TAPS and average_shift is None):
        return None
    window = _Window(pool[0], width * depth, pool[1], depth).collapsed()
    output = functools.partial(rounded_average, count=pool[0] * pool[1], activation=activation)

    def build(ins, outs):
        runs = _Builder(ins[0], outs[0], str(outs[0].shape[0].ty.dtype), ops)
        c = runs.const

        def row(b: tirx.PrimExpr, y: tirx.PrimExpr) -> tirx.Stmt:
            first_row = (b * c(height) + y * c(strides[0])) * c(width)
            out_row = (b * c(out_h) + y) * c(out_w)
            if strides[1] == 1:  # the row's pixels as one run of channels
                return runs.run(out_row * c(depth), first_row * c(depth), out_w * depth, window, output,
                                average_shift)
            return runs.loop("x", out_w, lambda x: runs.run(
                (out_row + x) * c(depth), (first_row + x * c(strides[1])) * c(depth), depth, window, output,
                average_shift))

        return runs.loop("b", batches, lambda b: runs.loop("y", out_h, lambda y: row(b, y)))

    return extern_from_zero((batches, out_h, out_w, depth), [data], build, "average_pool2d_int8")


COLUMN_ELEMENTS = 256
"""The most elements of an input row `average_pool_columns` sums (its int16 column sums on the stack: 512 B)."""


def average_pool_columns(data: te.Tensor, *, ops: WordOps, pool: Sequence[int], strides: Sequence[int],
                         padding: Sequence[int], activation: ActivationRange) -> Optional[te.Tensor]:
    """TFLite's int8 AVERAGE_POOL_2D of the NHWC `data` (arguments as `tvm_ext.kernels.average_pool2d_integer`'s)
    as column sums, or None where they do not fit: data not int8, a padded pool, a pool not stepping one column, a
    window one column wide, an output row of one pixel, more than PAIR_TAPS taps, or input rows of more than
    COLUMN_ELEMENTS elements. Overlapping windows share their columns: per output row, the window's rows are summed
    once for every element of the input row (channel agnostic: the row's elements in blocks of four, a word per
    row, SXTAB16 pairs stored as int16 in order, `WordOps`; the rest a byte per row), then each output element adds
    its window's columns (the elements `depth` apart: one load each) and takes `rounded_average` of the sum, the
    generic kernel's output to the bit. Taps per output element: pool[1] loads where the generic kernel loads
    pool[0] * pool[1] bytes; the rows' sums cost a word and two SXTAB16 per row and four elements."""
    batches, height, width, depth = (int(d) for d in data.shape)
    row = width * depth
    out_h = (height - pool[0]) // strides[0] + 1
    out_w = width - pool[1] + 1
    if (str(data.dtype) != "int8" or any(padding) or strides[1] != 1 or pool[1] < 2 or out_w < 2
            or pool[0] * pool[1] > PAIR_TAPS or row > COLUMN_ELEMENTS):
        return None
    blocks, rest = divmod(row, 4)
    output = functools.partial(rounded_average, count=pool[0] * pool[1], activation=activation)
    rows = _Window(1, 0, pool[0], row)  # the window's rows as one row's taps: UNROLLED_STEP of them a loop step

    def build(ins, outs):
        runs = _Builder(ins[0], outs[0], str(outs[0].shape[0].ty.dtype), ops)
        c = runs.const
        columns = tirx.decl_buffer((row,), "int16", name="columns", scope="local")

        def column_sums(first: tirx.PrimExpr) -> tirx.Stmt:
            def block(j: tirx.PrimExpr) -> tirx.Stmt:
                sums, pairs = runs.block_sums(first + j * c(4), rows)
                halves = [tirx.BufferLoad(pairs, [c(k)]) for k in (0, 1)]
                store = tirx.Evaluate(tirx.call_intrin("int32", runs.store_op, element_address(columns, j * c(4)),
                                                       *halves))
                return _seq([*sums, store])

            def single(i: tirx.PrimExpr) -> tirx.Stmt:
                at = c(4 * blocks) + i
                return runs.byte_sum(first + at, rows, lambda total: tirx.BufferStore(
                    columns, tirx.Cast("int16", total), [at]))

            return _seq([runs.loop("j", blocks, block)] * (blocks > 0) + [runs.loop("i", rest, single)] * (rest > 0))

        def outputs(out_row: tirx.PrimExpr) -> tirx.Stmt:
            def element(e: tirx.PrimExpr) -> tirx.Stmt:
                taps = [tirx.Cast("int32", tirx.BufferLoad(columns, [e + c(dx * depth)])) for dx in range(pool[1])]
                return runs.store(out_row + e, output(functools.reduce(lambda a, b: a + b, taps)))

            return runs.loop("e", out_w * depth, element)

        def out_row(b: tirx.PrimExpr, y: tirx.PrimExpr) -> tirx.Stmt:
            first = (b * c(height) + y * c(strides[0])) * c(row)
            return _seq([column_sums(first), outputs((b * c(out_h) + y) * c(out_w * depth))])

        return _seq([tirx.AllocBuffer(columns),
                     runs.loop("b", batches, lambda b: runs.loop("y", out_h, lambda y: out_row(b, y)))])

    return extern_from_zero((batches, out_h, out_w, depth), [data], build, "average_pool2d_int8")


def _runs(shape: Sequence[int], axes: Sequence[int]) -> Optional[tuple[int, int, int]]:
    """(outer, reduced, inner): the products of the axes before, of and after the reduced `axes` of `shape`, where
    the reduced ones are adjacent once axes of extent 1 are dropped; None where they are not."""
    reduced = [axis for axis in axes if shape[axis] != 1]
    if not reduced:
        return None
    first, last = min(reduced), max(reduced)
    if any(shape[axis] != 1 and axis not in axes for axis in range(first, last + 1)):
        return None
    return math.prod(shape[:first]), math.prod(shape[first:last + 1]), math.prod(shape[last + 1:])


def mean_words(data: te.Tensor, *, ops: WordOps, axes: Sequence[int], keepdims: bool, input_zero_point: int,
               output_zero_point: int, multiplier: int, shift: int, rounding: Rounding) -> Optional[te.Tensor]:
    """TFLite Micro's int8 MEAN or SUM of `data` (arguments as `tvm_ext.kernels.mean_or_sum_int8`'s) as window sums
    four elements a word (module docstring), or None where they do not fit: data not int8, reduced axes not
    adjacent, no output axis, or more than PAIR_TAPS taps per word lane (a run of channels: no divisor of its taps
    within PAIR_TAPS but 1, `_Window.chunked`: cortex-m4f, mobilenet_v3s_050_96's MEAN of 24x24 pixels of 16
    channels a chunk of 192 pixels at a time, 2.3 -> 1.0 instructions per input byte), or at most GENERIC_TAPS taps
    but where its runs are whole blocks and their outputs scaled where they lie (`lane_scale`) pay (`scale_pays`:
    cortex-m4f, mobilenet_v2_050_64_int8's MEAN of 2x2 pixels of 1,280 channels 3.5 -> 1.8 instructions per input
    byte, 17,932 -> 8,971, for 56 B)."""
    shape = [int(d) for d in data.shape]
    runs = _runs(shape, axes)
    out_shape = [1 if axis in axes else extent for axis, extent in enumerate(shape) if keepdims or axis not in axes]
    if str(data.dtype) != "int8" or runs is None or not out_shape:
        return None
    outer, count, inner = runs
    scale = lane_scale(count, input_zero_point, output_zero_point, multiplier, shift, rounding) \
        if count <= GENERIC_TAPS and inner > 1 and inner % 4 == 0 else None
    if scale is not None and not scale_pays(outer * inner, count, scale.signed):
        scale = None
    if (count <= GENERIC_TAPS and scale is None) or (count // 4 if inner == 1 else 0) > PAIR_TAPS or (
            inner > 1 and count > PAIR_TAPS and _Window(1, 0, count, inner).chunked() is None):
        return None
    output = rescaled(count, input_zero_point, output_zero_point, multiplier, shift, rounding, "int8")

    def build(ins, outs):
        runs_ = _Builder(ins[0], outs[0], str(outs[0].shape[0].ty.dtype), ops)
        c = runs_.const
        if inner == 1:  # a reduction over the innermost axes: the elements themselves four a word
            return runs_.loop("o", outer, lambda o: runs_.consecutive(o, o * c(count), count, output))
        window = _Window(1, 0, count, inner)
        return runs_.loop("o", outer, lambda o: runs_.run(o * c(inner), o * c(count * inner), inner, window, output,
                                                          scale=scale))

    return extern_from_zero(out_shape, [data], build, "mean_or_sum_int8")


@functools.cache
def window_sums_kernels(ops: WordOps) -> tuple[Callable[..., Optional[te.Tensor]], Callable[..., Optional[te.Tensor]],
                                               Callable[..., Optional[te.Tensor]]]:
    """The average pool's kernels and the MEAN's of the backend's `ops` (one tuple of functions per ops, so identical
    calls share their kernel): `average_pool_columns`, `average_pool_words` and `mean_words` with those ops."""
    return tuple(functools.partial(kernel, ops=ops) for kernel in (average_pool_columns, average_pool_words,
                                                                    mean_words))
