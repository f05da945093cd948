"""The DSP cores' kernel of an int8 DEPTHWISE_CONV_2D whose channels are not whole tiles of four (depth multiplier 1,
stepping one column): its output rows as runs of elements, four a call of the fused depthwise tile
(`<prefix>_depthwise_tiles_s8x4`, `backends.cortex_m.schedules.depthwise_tiles.DSP_TILES_OPS`), or from five
channels on its pixels' tiles of four channels, the last one overlapping (`<prefix>_depthwise_pixel_s8x4`,
PIXEL_OPS), whatever the channel count: the kernel the int8 lowering writes for such a layer where the backend gives
one (`backends.backend.KernelSchedules.few_channel_depthwise`).

Why: the DSP depthwise schedules take four consecutive channels of a pixel a tap, so a layer of 3, 5 or 30 channels
kept TVM's scalar loop nest, one copy per border case (cortex-m4f: a 3x3 layer over 12x12x3 12.4 instructions per MAC,
974 B of code; over 25x5x30 11.2). Both forms read a band: per output row (a strip of it, below) the window's rows
copied to the stack, padded with the input's zero point (the padding's value: the zero point is folded into the
biases), so that every output reads its window at one offset and no border case remains.

Runs: where the window steps one column, an output row's elements (pixel x's channel c is element x * C + c) read
their taps at one offset from the element whatever the channel (tap (r, k) at input row r, element + k * dilation *
C), so any four consecutive elements are a tile: its lanes' channels are (e + lane) mod C from its first element e,
its weights those of the tile's phase e mod C. The tiles start at elements 4t and the row's last four (run - 4, with
run a multiple of C), so their phases are the multiples of g = gcd(C, 4): the kernel lays out on its stack, once
per call, the weights, biases, multipliers and shifts of those C / g phases in the tile's lane order (weight[r, k,
(p + lane) mod C]), then calls the tile on the band for each four elements of the row, the last four ending at the
row's end (it may overlap the one before it: both write the same values).

Pixel tiles (from five channels, where `pixel_tiles_pay`, or where the runs' band or phases do not fit): each output
pixel is one call of `<prefix>_depthwise_pixel_s8x4`, the fused tiles of its channels 0-3, 4-7, .. and its last
four (C - 4 on), reading the weights, biases, multipliers and shifts where they are (no phases), the band a strip
of `strip_pixels` output pixels' windows (whole rows where they fit the band's bytes, else the fewest strips that
fit, their pixels spread evenly over the row: the strips' first pixels spread from the row's start to its last strip's,
some overlapping the one before it), so that any channel count whose one pixel's window columns fit
takes them. Cortex-m4f, a 3x3 layer over 25x5x30 (ds_cnn_w30_49x10_int8's): 379,404 -> 159,463 instructions (11.2
-> 4.7 per MAC; 28 channels through the DSP depthwise schedules: 4.1); over 12x12x42 (three strips a row) 4.9 per MAC
(44 channels: 3.8). A row of 14 outputs of 38 channels (room for 6 a strip) in three strips of 5 pixels, not of 6
(the pixels both strips compute 1, not 4): unseen mobilenet_v1_030_72x56_int8's 3x3 layer over 18x14x38 492,741 ->
415,517 instructions (5.7 -> 4.8 per MAC). An even channel count's weights come widened to int16 (the int8 lowering's, as for whole tiles:
`tvm_ext.transform.int8.conv`), which the pixel tiles read as they are (`PIXEL_OPS["int16"]`: a tap's weights one
LDRD, where int8 ones took a word and two SXTB16; the 25x5x30 layer 159,463 -> 142,840, 4.2 per MAC) where the
pixel tiles take the layer (`pixel_tiles_take`, the kernel's own choice, which the lowering asks): the runs and the
generic kernel read int8 ones (widened, a 6-channel layer of dilation 2 on the runs 22,913 -> 23,252 instructions,
one stepping two columns on the generic kernel 14,849 -> 15,368).

Window form (from five channels, where the window steps more than one column or not one pixel's window fits the
band: `_geometry`): each output pixel's pixel tiles read a copy of its window on the stack (its rows, or its taps,
copied where they lie in the image, the padding's taps the input's zero point), in chunks of `window_chunk` channels
where the whole window's would exceed the band's bytes (one pixel-tiles call a chunk; the last chunk may overlap the one
before it); the interior pixels read the image where it lies instead where every pixel is interior (no band) or
where the copies saved pay for the second inlined call's code at the code price (`interior_reads_pay`). Where the
generic kernel ran these layers (one copy of the code per border case, a channel at a time): cortex-m4f,
mobilenet_v1_035_96_int8's 3x3 layers (instructions per MAC; code of the kernel, B) over 24x24x22 stepping two
columns 11.8 -> 4.2 (interior pixels reading the image; 532 -> 1,390), 6x6x89 stepping two 11.6 -> 5.3 (548 -> 974),
6x6x179 11.2 -> 5.3 (1,008 -> 822), 3x3x179 stepping two 10.6 -> 5.3 (556 -> 828), 3x3x358 (60% of its taps in
the image: WINDOW_INSIDE) 9.0 -> 5.1 (1,022 -> 838); the model 26,257,752 -> 23,300,002 instructions, code 13,120
-> 14,312 B (its weights 3,420 B more: the 22 and 358 channels' widened to int16).

The same sums of the same products and TFLite's double-rounding requantization: bit-exact.

Chosen by shape (`few_channel_depthwise` gives None elsewhere: the generic kernel then): one int8 image, depth
multiplier 1, channels not a multiple of four (at least 2), a window stepping one column (any row stride, dilation,
padding; or any column stride from five channels: the window form), an output row of at least four elements, int32
or int16 biases with the input zero point folded in, per-channel multipliers and shifts of the "double_small"
requantization, no activation narrower than int8, a band within half the profile's `kernel_stack_bytes` (and the
runs' phases within the other half) of stack (`depthwise_rows.own_for_kernel_stack`; BAND_BYTES where it keeps the
default), and at least INSIDE of the window taps in the image.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from math import gcd
from typing import Optional, Sequence

from tvm import te, tirx

from backends.bias_forms import BIAS_TYPES, by_bias
from backends.code_price import INSTRUCTIONS_PER_BYTE
from backends.cortex_m.helpers import DEPTHWISE_PIXEL_HELPERS
from backends.cortex_m.helpers.depthwise_mac_c import WEIGHT_TAGS, dsp_depthwise_pixel_helper_name
from backends.cortex_m.schedules.depthwise_tiles import DEPTHWISE_TILES_ACCESS, DSP_TILES_OPS
from backends.cortex_m.schedules.window1_conv import _Stage
from tvm_ext.tir.extern_stage import element_address, extern_from_zero, row_major_indices
from target.profile import DEFAULT_KERNEL_STACK_BYTES
from tvm_ext.tir.helper_calls import register_helper_call

PIXEL_OPS = {weights: by_bias(f"tvm_ext.depthwise_pixel_s8x4{WEIGHT_TAGS[weights]}") for weights in WEIGHT_TAGS}
"""One pixel's fused tiles of any channel count from four per weight type (int8, or int16: widened by the int8
lowering for an even channel count, `tvm_ext.transform.int8.conv`) and bias type (``depthwise_pixel.h.in``): the
fused tile's call (`DSP_TILES_OPS`), the last tile overlapping the one before it."""
for _weights, _ops in PIXEL_OPS.items():
    for _bias in BIAS_TYPES:
        register_helper_call(_ops[_bias], DEPTHWISE_PIXEL_HELPERS,
                             functools.partial(dsp_depthwise_pixel_helper_name, bias=_bias, weights=_weights),
                             DEPTHWISE_TILES_ACCESS)

PIXEL_TAIL_OPS = by_bias("tvm_ext.depthwise_pixel_tail_s8x4")
"""The same over int8 weights for a channel count one more than a multiple of four, per bias type: the whole tiles,
then the last channel alone (``depthwise_pixel.h.in``'s ``_tail``), where it pays (`tail_pays`)."""
for _bias in BIAS_TYPES:
    register_helper_call(PIXEL_TAIL_OPS[_bias], DEPTHWISE_PIXEL_HELPERS,
                         functools.partial(dsp_depthwise_pixel_helper_name, bias=_bias, tail=True),
                         DEPTHWISE_TILES_ACCESS)
TAIL_SAVED_PER_TAP = 8
"""The instructions a call of the tail form saves against the last tile overlapping (PIXEL_OPS) per window tap: the
tile's input word, weight word, four SXTB16 and four SMLAxy against one channel's two LDRSB and SMLABB."""
TAIL_SAVED = 20
"""The instructions a call of the tail form saves besides its taps: three requantizations against the lone channel's
row loop. Cortex-m4f, unseen ds_cnn_w33_45x13_int8's 3x3 layer over 23x7x33, both figures together: 93 a pixel
(227,858 -> 212,841 instructions, 4.8 -> 4.5 per MAC; the model 1,815,337 -> 1,770,286)."""
TAIL_CODE_BYTES = 104
"""The code the tail form adds to a kernel, bytes: the lone channel's window and requantization, inlined (that
layer's bundle 4,184 -> 4,288 B)."""


def tail_pays(channels: int, taps: int, calls: int) -> bool:
    """Whether a kernel making `calls` pixel-tiles calls of `channels` channels over a window of `taps` taps saves
    more instructions with the tail form (its last channel alone: `channels` one more than a multiple of four, from
    5) than its code costs at the code price (TAIL_SAVED_PER_TAP, TAIL_SAVED, TAIL_CODE_BYTES)."""
    return (channels % LANES == 1 and channels > LANES
            and calls * (TAIL_SAVED_PER_TAP * taps + TAIL_SAVED) > TAIL_CODE_BYTES * INSTRUCTIONS_PER_BYTE)


BAND_BYTES = DEFAULT_KERNEL_STACK_BYTES // 2
"""The most bytes of the window's rows, padded, the kernel keeps on its stack (the band: whole rows for the runs,
a strip of them for pixel tiles, a window's copy for the window form) where the profile keeps the default
`kernel_stack_bytes`: half of a profile's (`band_bytes_of`); the runs' phases' constants (`phase_bytes`) take at most
as many, so the kernel's stack is at most the profile's kernel_stack_bytes and its scalars."""
LANES = 4
"""The elements of one tile (the fused helper's four channels)."""
INSIDE = 2 / 3
"""The least share of the layer's window taps lying in the image for the runs: they compute every tap over the
padded band, where the generic kernel's border cases skip the padding's (the layer sweep's 3x3 of dilation 3 over
6x6x5, 44% inside: 10,931 -> 11,130 instructions on cortex-m4f with the runs; its 3x3 over 6x6x5, 79%: 19,451 ->
10,949)."""
WINDOW_INSIDE = 1 / 2
"""The least share of the layer's window taps lying in the image for the window form, whose border pixels compute
their padding's taps too, but at the interior's cost a tap, where the generic kernel skips them at several times
that cost a tap (cortex-m4f, mobilenet_v1_035_96_int8's 3x3 layer over 3x3x358, 60% inside: 9.0 instructions per
MAC on the generic kernel)."""
GENERIC_PER_MAC = 10.5
"""The generic kernel's instructions per MAC on the layers the window form takes, about the least measured
(cortex-m4f, mobilenet_v1_030_80_int8's and mobilenet_v1_035_96_int8's 3x3 layers stepping two columns or over
153-179 channels: 10.5-11.8; 9.0 over 3x3x358, of which 40% of the taps are padding the generic kernel skips)."""
WINDOW_PER_MAC = 5.3
"""The window form's instructions per MAC on those layers, about the most measured (4.0-5.4)."""
WINDOW_CODE_BYTES = 400
"""The code the window form adds against the generic kernel's, about the most measured where it copies every
window (mobilenet_v1_030_80_int8's 3x3 layers stepping two columns over 10x10x38 +354 B, 2x2x153 +402 B; over
5x5x153, stepping one column, -178 B: the generic kernel's border cases)."""
COPY_BYTE_COST = 1.0
"""The instructions a byte of a window's copy costs in the window form (cortex-m4f, mobilenet_v1_035_96_int8's 3x3
layers stepping two columns: 202 instructions a pixel over 24x24x22, 800 over 6x6x89: copies of the window's rows,
or its taps, of `<prefix>_copy_ascending` and the tests of their place)."""
DIRECT_CODE_BYTES = 600
"""The code the window form's second call (interior pixels reading the image, inlined) adds (cortex-m4f,
mobilenet_v1_035_96_int8's: 466-696 B a kernel)."""
RUN_CALL_COST = 1.2
"""A run's tile call's instructions in pixel tiles' tile calls (cortex-m4f, 3x3: 193-202 instructions a run's call
over 12x12 pixels of 5-10 channels, its phase's address from the element; a pixel tile 164-175 over 25x5x30 and
12x12x42)."""
PIXEL_PASS_TILES = 0.25
"""A pixel's second pass (its last tile's) in pixel tiles' tile calls beside its tiles' (the 3x3 over 12x12x7: 362
instructions a pixel of two tiles)."""


def band_bytes_of(kernel_stack_bytes: int) -> int:
    """The band's most bytes (and the phases') on a profile whose kernels keep at most `kernel_stack_bytes` of local
    arrays on their stacks (target.Profile.kernel_stack_bytes): half of them each."""
    return kernel_stack_bytes // 2


def inside_share(size: int, kernel: int, stride: int, dilation: int, before: int, outputs: int) -> float:
    """The share of `outputs` windows' taps (`kernel` taps `dilation` apart, `stride` apart, the first `before`
    elements ahead of the axis) along an axis of `size` elements that lie on the axis."""
    inside = sum(0 <= o * stride - before + k * dilation < size for o in range(outputs) for k in range(kernel))
    return inside / (outputs * kernel)


def phase_bytes(phases: int, taps: int, bias_bytes: int) -> int:
    """The stack bytes of the runs' `phases` phases' constants in lane order: per phase and lane its int8 weight of
    each of the window's `taps`, its bias (`bias_bytes`), int32 multiplier and int8 shift."""
    return phases * LANES * (taps + bias_bytes + 4 + 1)


def pixel_tiles_pay(channels: int, out_w: int) -> bool:
    """Whether pixel tiles run an output row of `out_w` pixels of `channels` channels in fewer instructions than the
    runs: ceil(channels / 4) tile calls and a second pass (PIXEL_PASS_TILES) a pixel against the runs' ceil(out_w *
    channels / 4) calls of RUN_CALL_COST each (their code is about the same: one inlined tile each; cortex-m4f, 3x3
    over 12x12x7: 824 B pixel tiles, 968 B runs)."""
    return out_w * (-(-channels // LANES) + PIXEL_PASS_TILES) < -(-out_w * channels // LANES) * RUN_CALL_COST


def strip_pixels(channels: int, kh: int, kw: int, dilation: int, out_w: int, band_bytes: int = BAND_BYTES) -> int:
    """The output pixels of a strip (at most `out_w`): the fewest strips a row takes whose pixels' windows' columns
    (`kw` taps `dilation` apart) over `kh` rows of `channels` channels fit `band_bytes`, their pixels spread evenly
    over the row (rounded up); 0 where not one pixel's window fits. Spread, the strips overlap by fewer pixels than
    the most that fit would (each overlapping pixel computed twice): 14 outputs with room for 6 take three strips of
    5 (15 pixels computed), not of 6 (18)."""
    most = max(0, min(out_w, band_bytes // (kh * channels) - (kw - 1) * dilation))
    return -(-out_w // -(-out_w // most)) if most else 0


def dsp_operands_fit(data: te.Tensor, weight: te.Tensor, bias: Optional[te.Tensor], stage: _Stage,
                     multiplier: Optional[te.Tensor], shift: Optional[te.Tensor], zero_point_in_bias: bool) -> bool:
    """Whether the DSP cores' depthwise helpers (these tiles and `depthwise_rows`' channel rows) take this layer's
    operands: one int8 image, a weight (..., C) for each of its C channels, int32 or int16 biases with the input
    zero point folded in, per-channel multipliers and shifts of the "double_small" requantization and no activation
    narrower than int8 (each kernel checks its weights' types and window besides)."""
    batch, _, _, channels = (int(d) for d in data.shape)
    return (str(data.dtype) == "int8" and batch == 1 and int(weight.shape[-1]) == channels
            and bias is not None and str(bias.dtype) in ("int32", "int16") and zero_point_in_bias
            and multiplier is not None and shift is not None and stage.rounding.value == "double"
            and stage.right_shift_only and stage.small_accumulator and stage.activation.low <= -128
            and stage.activation.high >= 127)


def _fits(data: te.Tensor, weight: te.Tensor, bias: Optional[te.Tensor], stage: _Stage,
          multiplier: Optional[te.Tensor], shift: Optional[te.Tensor], zero_point_in_bias: bool) -> bool:
    """Whether the tiles compute this layer's outputs (the module docstring's requantization and operands)."""
    channels = int(data.shape[3])
    widened = str(weight.dtype) == "int16" and channels % 2 == 0  # the pixel tiles' LDRD: even channels
    return ((str(weight.dtype) == "int8" or widened) and channels % LANES != 0 and channels >= 2
            and dsp_operands_fit(data, weight, bias, stage, multiplier, shift, zero_point_in_bias))


def few_channel_depthwise(data: te.Tensor, weight: te.Tensor, bias: Optional[te.Tensor], *, input_zero_point: int,
                          output: _Stage, strides: Sequence[int], padding: Sequence[int], dilation: Sequence[int],
                          multiplier: Optional[te.Tensor] = None, shift: Optional[te.Tensor] = None,
                          zero_point_in_bias: bool = False, band_bytes: int = BAND_BYTES) -> Optional[te.Tensor]:
    """An int8 DEPTHWISE_CONV_2D (operands and keywords as `tvm_ext.kernels.depthwise_conv2d_int8`'s: weight
    (KH, KW, C); int16 only where the pixel tiles take the layer: `pixel_tiles_take`) as runs of four-element tiles
    or pixel tiles (module docstring) with a band (and phases) within `band_bytes` of stack, or None where neither
    fits."""
    if not _fits(data, weight, bias, output, multiplier, shift, zero_point_in_bias):
        return None
    geometry = _geometry(tuple(int(d) for d in data.shape[1:]), tuple(int(d) for d in weight.shape[:2]), strides,
                         padding, dilation, 4 if str(bias.dtype) == "int32" else 2, band_bytes)
    if geometry is None or (geometry.runs and str(weight.dtype) != "int8"):  # widened: pixel tiles only
        return None
    if geometry.runs:
        ops = DSP_TILES_OPS
    elif str(weight.dtype) == "int8" and tail_pays(geometry.call_channels, geometry.kh * geometry.kw,
                                                   geometry.pixel_calls):
        ops = PIXEL_TAIL_OPS
    else:
        ops = PIXEL_OPS[str(weight.dtype)]
    op = ops[str(bias.dtype)]
    return extern_from_zero((1, geometry.out_h, geometry.out_w, geometry.channels), [data, weight, bias, multiplier, shift],
                            lambda ins, outs: (_window_kernel if geometry.window else _kernel)(
                                geometry, op, input_zero_point, output.zero_point, ins, outs),
                            "depthwise_conv2d_int8_runs")


def pixel_tiles_take(shape: Sequence[int], window: Sequence[int], strides: Sequence[int], padding: Sequence[int],
                     dilation: Sequence[int], bias_bytes: int, band_bytes: int = BAND_BYTES) -> bool:
    """Whether `few_channel_depthwise` runs a layer of these shapes (input (H, W, C), window (KH, KW), strides,
    padding (top, left, bottom, right), dilation, `bias_bytes` a channel's bias as stored, its `band_bytes`) as
    pixel tiles where its
    operands fit (`_fits`): the one choice of the kernel (`_geometry`), which the int8 lowering reads to widen an even
    channel count's weights to int16 only where the pixel tiles read them (the generic kernel and the runs read int8
    ones: `backends.backend.KernelSchedules.depthwise_pixel_tiles`)."""
    geometry = _geometry(shape, window, strides, padding, dilation, bias_bytes, band_bytes)
    return geometry is not None and geometry.runs == 0


def _geometry(shape: Sequence[int], window: Sequence[int], strides: Sequence[int], padding: Sequence[int],
              dilation: Sequence[int], bias_bytes: int, band_bytes: int) -> Optional[_Geometry]:
    """The kernel's form of a layer whose operands fit (`_fits`; arguments as `pixel_tiles_take`'s): pixel tiles
    (runs 0) or runs, or None where neither takes it (a window not stepping one column, too few of its taps in the
    image, a band or phases over `band_bytes`)."""
    in_h, in_w, channels = (int(d) for d in shape)
    kh, kw = (int(d) for d in window)
    top, left, bottom, right = (int(p) for p in padding)
    out_h = (in_h + top + bottom - (kh - 1) * dilation[0] - 1) // strides[0] + 1
    out_w = (in_w + left + right - (kw - 1) * dilation[1] - 1) // strides[1] + 1
    share = inside_share(in_h, kh, strides[0], dilation[0], top, out_h) * inside_share(
        in_w, kw, strides[1], dilation[1], left, out_w)
    if out_w * channels < LANES or share < WINDOW_INSIDE:
        return None
    chunk = window_chunk(channels, kh, kw, band_bytes)
    if channels > LANES and chunk and window_pays(out_h * out_w * kh * kw * channels) and (
            int(strides[1]) != 1 or strip_pixels(channels, kh, kw, dilation[1], out_w, band_bytes) == 0):
        interior = (interior_outputs(in_h, kh, strides[0], dilation[0], top, out_h)
                    * interior_outputs(in_w, kw, strides[1], dilation[1], left, out_w))
        return _Geometry(in_h, in_w, channels, kh, kw, top, left, strides[0], dilation, out_h, out_w, 1,
                         column_stride=int(strides[1]), window=chunk,
                         direct=interior_reads_pay(interior, out_h * out_w, kh * kw * channels))
    if int(strides[1]) != 1 or share < INSIDE:
        return None
    used = channels // gcd(channels, LANES)  # the phases the runs' tiles start at (module docstring)
    runs_fit = (kh * (in_w + left + right) * channels <= band_bytes
                and phase_bytes(used, kh * kw, bias_bytes) <= band_bytes)
    strip = strip_pixels(channels, kh, kw, dilation[1], out_w, band_bytes)
    if channels > LANES and strip > 0 and (not runs_fit or pixel_tiles_pay(channels, out_w)):
        return _Geometry(in_h, in_w, channels, kh, kw, top, left, strides[0], dilation, out_h, out_w, strip)
    if runs_fit:
        return _Geometry(in_h, in_w, channels, kh, kw, top, left, strides[0], dilation, out_h, out_w, out_w,
                         runs=used)
    return None


@dataclass(frozen=True)
class _Geometry:
    """A layer's shape as the kernel reads it: its input (in_h x in_w x channels), window (kh x kw, `dilation`
    (rows, columns) apart), padding ahead (top, left), row stride, output (out_h x out_w), the output pixels of
    one band (`strip`, out_w where the band holds whole rows) and the phases the runs lay out (`runs`; 0: pixel
    tiles); in the window form (`window`: the channels of one window copy, 0 for the other forms) its column stride
    and how interior pixels read their windows (`direct`: `interior_reads_pay`'s "only", "image" or "")."""

    in_h: int
    in_w: int
    channels: int
    kh: int
    kw: int
    top: int
    left: int
    stride: int
    dilation: Sequence[int]
    out_h: int
    out_w: int
    strip: int
    runs: int = 0
    column_stride: int = 1
    window: int = 0
    direct: str = ""

    @property
    def band_pixels(self) -> int:
        """The pixels of one band row: the strip's windows' columns."""
        return self.strip + (self.kw - 1) * self.dilation[1]

    @property
    def pitch(self) -> int:
        """The elements of one band row."""
        return self.band_pixels * self.channels

    @property
    def strips(self) -> int:
        """The bands of one output row (where `strip` does not divide out_w, some overlap the one before them)."""
        return -(-self.out_w // self.strip)

    @property
    def call_channels(self) -> int:
        """The channels of one pixel tiles' call: a chunk's in the window form, else all."""
        return self.window or self.channels

    @property
    def pixel_calls(self) -> int:
        """The pixel tiles' calls of one kernel call: each pixel's chunks in the window form, else each strip's
        pixels (some twice where strips overlap)."""
        if self.window:
            return self.out_h * self.out_w * -(-self.channels // self.window)
        return self.out_h * self.strips * self.strip


def window_pays(macs: int) -> bool:
    """Whether the window form of a layer of `macs` MACs (padded taps count) saves more instructions per call than
    its code costs over the generic kernel's at the code price: GENERIC_PER_MAC against WINDOW_PER_MAC a MAC, for
    WINDOW_CODE_BYTES."""
    return macs * (GENERIC_PER_MAC - WINDOW_PER_MAC) >= WINDOW_CODE_BYTES * INSTRUCTIONS_PER_BYTE


def interior_outputs(size: int, kernel: int, stride: int, dilation: int, before: int, outputs: int) -> int:
    """The outputs along an axis (arguments as `inside_share`'s) whose whole window lies on the axis."""
    return sum(0 <= o * stride - before and o * stride - before + (kernel - 1) * dilation < size
               for o in range(outputs))


def interior_reads_pay(interior: int, pixels: int, window_bytes: int) -> str:
    """How the window form's `interior` pixels (of `pixels`, each window `window_bytes` bytes) read their windows:
    "only" where every pixel is interior (the image where it lies: no copy, no band), "image" where reading them
    there rather than copying them saves more than the second inlined call's code costs at the code price
    (COPY_BYTE_COST a byte, DIRECT_CODE_BYTES), else "" (every pixel's window copied: one call)."""
    if interior == pixels:
        return "only"
    return "image" if interior * window_bytes * COPY_BYTE_COST > DIRECT_CODE_BYTES * INSTRUCTIONS_PER_BYTE else ""


def window_chunk(channels: int, kh: int, kw: int, band_bytes: int = BAND_BYTES) -> int:
    """The channels of one border pixel's window copy in the window form (`kh` x `kw` taps within `band_bytes` of
    stack): all `channels` where they fit, else the fewest chunks' evenly spread count rounded up to a multiple of
    LANES (the chunks from channel min(j * chunk, channels - chunk): the last may overlap the one before it); 0
    where not LANES channels' window fits."""
    most = band_bytes // (kh * kw) // LANES * LANES
    if most < LANES:
        return 0
    if channels <= most:
        return channels
    chunks = -(-channels // most)
    return -(-(-(-channels // chunks)) // LANES) * LANES


def _kernel(g: _Geometry, op: str, input_zero_point: int, output_zero_point: int, ins, outs) -> tirx.Stmt:
    """The kernel's statements (module docstring) on the extern stage's buffers `ins` (data, weights, biases,
    multipliers, shifts) and `outs`, the tile helper's `op`."""
    source, weights, biases, multipliers, shifts = ins
    index = str(outs[0].shape[0].ty.dtype)
    channels = g.channels

    def c(value: int) -> tirx.PrimExpr:
        return tirx.const(value, index)

    def loop(name: str, extent: int, body) -> tirx.Stmt:
        var = tirx.Var(name, index)
        return tirx.For(var, c(0), c(extent), tirx.ForKind.SERIAL, body(var))

    band = tirx.decl_buffer((g.kh * g.pitch,), "int8", name="band", scope="local")
    zero_point = tirx.const(input_zero_point, "int8")

    def copy(at: tirx.PrimExpr, row: tirx.PrimExpr, column: tirx.PrimExpr, pixels: int) -> tirx.Stmt:
        """Band elements from `at` on: `pixels` pixels of input row `row` from `column` on."""
        start = (row * c(g.in_w) + column) * c(channels)
        return loop("i", pixels * channels, lambda i: tirx.BufferStore(
            band, tirx.BufferLoad(source, row_major_indices(source, start + i)), [at + i]))

    def fill(at: tirx.PrimExpr, pixels: int) -> tirx.Stmt:
        """Band elements from `at` on: `pixels` pixels of the padding (the input's zero point)."""
        return loop("i", pixels * channels, lambda i: tirx.BufferStore(band, zero_point, [at + i]))

    def band_row(y: tirx.PrimExpr, r: tirx.PrimExpr, x0: tirx.PrimExpr) -> tirx.Stmt:
        """Band row r of output row y's band from output pixel x0 on: input row y * stride - top + r * dilation's
        pixels from column x0 - left on, or the zero point outside the image."""
        row = y * c(g.stride) - c(g.top) + r * c(g.dilation[0])
        at = r * c(g.pitch)
        if g.strips == 1:  # the padding's columns stay the zero point the kernel's start wrote
            inside, outside = copy(at + c(g.left * channels), row, c(0), g.in_w), fill(at + c(g.left * channels),
                                                                                       g.in_w)
        else:
            column = x0 - c(g.left)

            def pixel(j: tirx.PrimExpr) -> tirx.Stmt:
                return tirx.IfThenElse(tirx.all(column + j >= c(0), column + j < c(g.in_w)),
                                       copy(at + j * c(channels), row, column + j, 1),
                                       fill(at + j * c(channels), 1))
            inside = tirx.IfThenElse(tirx.all(column >= c(0), column + c(g.band_pixels) <= c(g.in_w)),
                                     copy(at, row, column, g.band_pixels), loop("j", g.band_pixels, pixel))
            outside = fill(at, g.band_pixels)
        return tirx.IfThenElse(tirx.all(row >= c(0), row < c(g.in_h)), inside, outside)

    def call(out: tirx.PrimExpr, element: tirx.PrimExpr, constants: tuple, sizes: tuple) -> tirx.Stmt:
        """The tile helper's call writing outputs from element `out` on, reading the band from `element` on: its
        weights, biases, multipliers and shifts at `constants` (addresses), the band's and weights' strides and
        the window's size and channels `sizes`."""
        return tirx.Evaluate(tirx.call_intrin(
            "int32", op, element_address(outs[0], out), element_address(band, element), *constants,
            tirx.const(output_zero_point, "int32"), *(tirx.const(size, "int32") for size in sizes)))

    if g.runs:
        tiles, buffers, layout = _runs(g, c, loop, call, ins)
    else:
        def tiles(y: tirx.PrimExpr, x0: tirx.PrimExpr) -> tirx.Stmt:
            return loop("x", g.strip, lambda x: call(
                (y * c(g.out_w) + x0 + x) * c(channels), x * c(channels),
                tuple(element_address(values, c(0)) for values in (weights, biases, multipliers, shifts)),
                (g.pitch, g.dilation[1] * channels, g.kw * channels, channels, g.kh, g.kw, channels)))
        buffers, layout = [], []

    def strip(y: tirx.PrimExpr, s: tirx.PrimExpr) -> tirx.Stmt:
        # the strips' first pixels spread evenly from 0 to out_w - strip, at most `strip` apart (a quotient, not a
        # min: the copies' indices then evaluate as runs, extern_helpers)
        x0 = tirx.floordiv(s * c(g.out_w - g.strip), c(g.strips - 1)) if g.strips > 1 else c(0)
        return tirx.SeqStmt([loop("r", g.kh, lambda r: band_row(y, r, x0)), tiles(y, x0)])

    return tirx.SeqStmt([*(tirx.AllocBuffer(buffer) for buffer in (band, *buffers)), *layout,
                         loop("i", g.kh * g.pitch, lambda i: tirx.BufferStore(band, zero_point, [i])),
                         loop("y", g.out_h, lambda y: loop("s", g.strips, lambda s: strip(y, s)))])


def _window_kernel(g: _Geometry, op: str, input_zero_point: int, output_zero_point: int, ins, outs) -> tirx.Stmt:
    """The window form's statements (module docstring; arguments as `_kernel`'s, `op` the pixel tiles' helper): an
    interior pixel's tiles read the image where it lies, a border pixel's the copy of its window (the image's taps,
    the padding's the input's zero point) in chunks of `g.window` channels."""
    source, weights, biases, multipliers, shifts = ins
    index = str(outs[0].shape[0].ty.dtype)
    channels, chunk = g.channels, g.window
    chunks = -(-channels // chunk)

    def c(value: int) -> tirx.PrimExpr:
        return tirx.const(value, index)

    def loop(name: str, extent: int, body) -> tirx.Stmt:
        var = tirx.Var(name, index)
        return tirx.For(var, c(0), c(extent), tirx.ForKind.SERIAL, body(var))

    band = tirx.decl_buffer((g.kh * g.kw * chunk,), "int8", name="band", scope="local")
    zero_point = tirx.const(input_zero_point, "int8")

    def call(out: tirx.PrimExpr, x: tirx.PrimExpr, first: tirx.PrimExpr, sizes: tuple) -> tirx.Stmt:
        """The pixel tiles' call writing outputs from element `out` on, reading x (an address), the constants from
        channel `first` on, the strides of x and the weights and the window's size and channels `sizes`."""
        return tirx.Evaluate(tirx.call_intrin(
            "int32", op, element_address(outs[0], out), x,
            *(element_address(values, first) for values in (weights, biases, multipliers, shifts)),
            tirx.const(output_zero_point, "int32"), *(tirx.const(size, "int32") for size in sizes)))

    def pixel(y: tirx.PrimExpr, x: tirx.PrimExpr) -> tirx.Stmt:
        row0, column0 = y * c(g.stride) - c(g.top), x * c(g.column_stride) - c(g.left)
        out = (y * c(g.out_w) + x) * c(channels)

        def part(j: tirx.PrimExpr) -> tirx.Stmt:
            first = tirx.min(j * c(chunk), c(channels - chunk)) if chunks > 1 else c(0)

            def tap(r: tirx.PrimExpr, k: tirx.PrimExpr) -> tirx.Stmt:
                row, column = row0 + r * c(g.dilation[0]), column0 + k * c(g.dilation[1])
                start, at = (row * c(g.in_w) + column) * c(channels) + first, (r * c(g.kw) + k) * c(chunk)
                return tirx.IfThenElse(
                    tirx.all(row >= c(0), row < c(g.in_h), column >= c(0), column < c(g.in_w)),
                    loop("i", chunk, lambda i: tirx.BufferStore(
                        band, tirx.BufferLoad(source, row_major_indices(source, start + i)), [at + i])),
                    loop("i", chunk, lambda i: tirx.BufferStore(band, zero_point, [at + i])))
            def band_row(r: tirx.PrimExpr) -> tirx.Stmt:
                taps = loop("k", g.kw, lambda k: tap(r, k))
                if chunk < channels or g.dilation[1] != 1:
                    return taps
                row = row0 + r * c(g.dilation[0])  # the row's taps one run of the image where they lie in it
                start = (row * c(g.in_w) + column0) * c(channels)
                return tirx.IfThenElse(
                    tirx.all(row >= c(0), row < c(g.in_h), column0 >= c(0), column0 + c(g.kw - 1) < c(g.in_w)),
                    loop("i", g.kw * channels, lambda i: tirx.BufferStore(
                        band, tirx.BufferLoad(source, row_major_indices(source, start + i)),
                        [r * c(g.kw * channels) + i])), taps)
            return tirx.SeqStmt([loop("r", g.kh, band_row),
                                 call(out + first, element_address(band, c(0)), first,
                                      (g.kw * chunk, chunk, g.kw * channels, channels, g.kh, g.kw, chunk))])
        copied = loop("j", chunks, part) if chunks > 1 else part(c(0))
        if not g.direct:
            return copied
        rows, columns = (g.kh - 1) * g.dilation[0], (g.kw - 1) * g.dilation[1]
        direct = call(out, element_address(source, (row0 * c(g.in_w) + column0) * c(channels)), c(0),
                      (g.in_w * channels * g.dilation[0], channels * g.dilation[1], g.kw * channels, channels, g.kh,
                       g.kw, channels))
        if g.direct == "only":
            return direct
        return tirx.IfThenElse(tirx.all(row0 >= c(0), row0 + c(rows) < c(g.in_h), column0 >= c(0),
                                        column0 + c(columns) < c(g.in_w)), direct, copied)

    pixels = loop("y", g.out_h, lambda y: loop("x", g.out_w, lambda x: pixel(y, x)))
    return pixels if g.direct == "only" else tirx.SeqStmt([tirx.AllocBuffer(band), pixels])


def _runs(g: _Geometry, c, loop, call, ins) -> tuple:
    """The runs of four elements of an output row (module docstring): (the row's tile calls as a function of the
    row and its first pixel (0), the phases' stack buffers, the statements laying out the used phases); `c`,
    `loop` and `call` the kernel's constants, loops and tile call, `ins` its inputs."""
    _, weights, biases, multipliers, shifts = ins
    channels, used, taps, run = g.channels, g.runs, g.kh * g.kw, g.out_w * g.channels
    step = channels // used  # the phases' spacing: gcd(channels, LANES)
    phase_w = tirx.decl_buffer((used * taps * LANES,), "int8", name="phase_w", scope="local")
    phase_b = tirx.decl_buffer((used * LANES,), str(biases.dtype), name="phase_b", scope="local")
    phase_m = tirx.decl_buffer((used * LANES,), "int32", name="phase_m", scope="local")
    phase_s = tirx.decl_buffer((used * LANES,), "int8", name="phase_s", scope="local")

    def phases(p: tirx.PrimExpr) -> tirx.Stmt:
        def lane(k: tirx.PrimExpr) -> tirx.Stmt:
            channel, at = tirx.truncmod(p * c(step) + k, c(channels)), p * c(LANES) + k
            tap_weights = loop("t", taps, lambda t: tirx.BufferStore(
                phase_w, tirx.BufferLoad(weights, [tirx.truncdiv(t, c(g.kw)), tirx.truncmod(t, c(g.kw)), channel]),
                [(p * c(taps) + t) * c(LANES) + k]))
            return tirx.SeqStmt([tirx.BufferStore(buffer, tirx.BufferLoad(values, [channel]), [at])
                                 for buffer, values in ((phase_b, biases), (phase_m, multipliers),
                                                        (phase_s, shifts))] + [tap_weights])
        return loop("k", LANES, lane)

    def tiles(y: tirx.PrimExpr, _x0: tirx.PrimExpr) -> tirx.Stmt:
        def tile(t: tirx.PrimExpr) -> tirx.Stmt:
            first = tirx.min(t * c(LANES), c(run - LANES)) if run % LANES else t * c(LANES)
            # the phase's constants at its slot (phase / step) * LANES: no division, step divides LANES
            phase = tirx.truncmod(first, c(channels))
            return call(y * c(run) + first, first, (element_address(phase_w, phase * c(taps * LANES // step)),
                                                    *(element_address(buffer, phase * c(LANES // step))
                                                      for buffer in (phase_b, phase_m, phase_s))),
                        (g.pitch, g.dilation[1] * channels, g.kw * LANES, LANES, g.kh, g.kw, LANES))
        return loop("t", -(-run // LANES), tile)

    return tiles, [phase_w, phase_b, phase_m, phase_s], [loop("p", used, phases)]

