"""The DSP cores' kernel of an int8 DEPTHWISE_CONV_2D as channel rows: one call of the bundle's one out-of-line copy
of `<prefix>_depthwise_rows3x3_s8` for a 3x3 window, or of `<prefix>_depthwise_rows_s8` for any other of at most
MAX_KH rows and MAX_KW columns (`backends.cortex_m.helpers.depthwise_mac_c`'s DEPTHWISE_ROWS_TEMPLATE and
DEPTHWISE_ROWS_ANY_TEMPLATE, their contracts and per-MAC budgets in ``depthwise_rows.h.in`` and
``depthwise_rows_any.h.in``), its band of widened input rows on the kernel's stack.

Why: the four-channel tiles (``depthwise_tiles``) take a tap of four channels as one SXTB16 pair and four SMLAxy,
2 instructions per MAC in the taps alone, and load each tile's biases, multipliers and shifts per pixel: cortex-m4f,
3.3-3.9 instructions per MAC on the shared models' 3x3 layers (mobilenet_v2_050_64_int8's 16x16x96 3.7, the
depthwise kind's target 2: `packager.kernel_kinds`), 3.0-3.4 on efficientnet_lite's 5x5 ones. The channel rows keep
one channel's weights (as int16 pairs: the 3x3 window's in registers, any other's packed on the band), bias,
multiplier and shift over all its outputs, and widen each input row of it once into a ring of int16 band rows, so
that two adjacent outputs' window row is one LDRD and four dual or single MACs (3x3), or four adjacent outputs'
window row is per two taps one LDR of inputs, one LDRD of weights and four SMLAD (any other window).

Chosen (`channel_rows`) where the layer fits (one int8 image, depth multiplier 1, a window stepping any rows and
columns, dilated along rows only, int32 or int16 biases with the input zero point folded in, the "double_small"
requantization, no activation narrower than int8, its band within `band_bytes`) and pays: its instructions
(`rows_instructions`) fewer than the tiles' (`tiles_instructions`) by more than the code they add costs at the code
price (ROWS_CODE_BYTES, ANY_CODE_BYTES: the helper's one copy priced in every kernel, the conservative side). Their
per-row and per-channel costs leave small images to the tiles (cortex-m4f: an 8x8x96 3x3 layer 3.9 per MAC on the
tiles, about 4.2 as rows; a 7x7x144 5x5 one 3.4 either way), and the rows of any other window step one column
(stepping more, one output at a time, they lose: 4.7 per MAC against the tiles' 3.0 on a 5x5 layer at stride 2).

Measured on cortex-m4f (instructions per MAC, tiles -> rows): mobilenet_v2_050_64_int8's 3x3 layers on 32x32x16
3.8 -> 2.9, 16x16x96 3.7 -> 3.3; its code 16,960 -> 16,468 B. efficientnet_lite_w030_112_int8's 5x5 layer on
14x14x96 3.2 -> 2.5 (efficientnet_lite_w030_112_int8 28,776,522 -> 28,464,997 instructions, code 30,476 ->
29,740 B).
"""

from __future__ import annotations

import functools
from typing import Callable, Optional, Sequence

from tvm import te, tirx

from backends.code_price import INSTRUCTIONS_PER_BYTE
from backends.cortex_m.helpers import DEPTHWISE_ROWS_ANY_HELPERS, DEPTHWISE_ROWS_HELPERS
from backends.cortex_m.schedules.depthwise_runs import (BAND_BYTES, band_bytes_of, dsp_operands_fit,
                                                       few_channel_depthwise, pixel_tiles_take)
from backends.cortex_m.schedules.window1_conv import _Stage
from tvm_ext.tir.extern_stage import element_address, extern_from_zero
from tvm_ext.tir.helper_access import Arg, Axis, HelperAccess, PointerAccess
from tvm_ext.tir.helper_calls import register_helper_call

ROWS_OP = "tvm_ext.depthwise_rows3x3_s8"
"""The channel rows' helper call (its arguments: ``depthwise_rows.h.in``'s contract)."""
# (out, x, w, weight_bytes, bias, bias_bytes, multiplier, shift, band, zero_point, value, in_h, in_row, channels,
# out_h, out_row, top, left, pitch, stride_h, stride_w, ring): band (int16) ring rows of pitch elements and one
# more (the helper starts it at a 4-byte boundary)
ROWS_ACCESS = HelperAccess((
    PointerAccess(0, (Axis(Arg(14), Arg(15)), Axis(Arg(15), 1))),
    PointerAccess(1, (Axis(Arg(11), Arg(12)), Axis(Arg(12), 1))),
    PointerAccess(2, (Axis(9, Arg(13)), Axis(Arg(13), 1))),
    *(PointerAccess(pointer, (Axis(Arg(13), 1),)) for pointer in (4, 6, 7)),
    PointerAccess(8, (Axis(Arg(21), Arg(18)), Axis(Arg(18), 1), Axis(2, 1))),
))
register_helper_call(ROWS_OP, DEPTHWISE_ROWS_HELPERS, lambda prefix: f"{prefix}_depthwise_rows3x3_s8", ROWS_ACCESS)
ANY_OP = "tvm_ext.depthwise_rows_s8"
"""The channel rows' helper call of any window (ROWS_OP's arguments, then the window's rows kh and columns kw)."""
ANY_ACCESS = HelperAccess((
    *ROWS_ACCESS.pointers[:-1],
    # the ring, then kh window rows of at most kw + 2 int32 pairs: 2 * kw + 4 int16 a row
    PointerAccess(8, (Axis(Arg(21), Arg(18)), Axis(Arg(18), 1), Axis(2, 1), Axis(Arg(22), Arg(23)),
                      Axis(Arg(22), Arg(23)), Axis(Arg(22), 4), Axis(Arg(23), 2), Axis(6, 1))),
))
register_helper_call(ANY_OP, DEPTHWISE_ROWS_ANY_HELPERS, lambda prefix: f"{prefix}_depthwise_rows_s8", ANY_ACCESS)

SIDE = 3
"""The window's rows and columns the 3x3 helper takes (ROWS_OP; any other window: ANY_OP)."""
MAX_KH = 16
"""The most window rows the helper of any window takes (its row pointers: ``<PREFIX>_DEPTHWISE_ROWS_MAX_KH``)."""
MAX_KW = 7
"""... and the most window columns (four word pairs a row: `window_words`, which the helper unrolls)."""
TILES_PER_TAP = 2.75
TILES_PER_OUTPUT = 7.65
"""The four-channel tiles' instructions, per tap of an output and per output besides (cortex-m4f:
mobilenet_v2_050_64_int8's 3x3 layers, 3.6 per MAC, about the least measured (3.7-4.1 stepping one column, 3.6-4.5
stepping two); efficientnet_lite_w030_112_int8's 5x5 layers 3.0-3.4 per MAC, 75-85 an output)."""
ROWS_PER_MAC = 2.15
"""The 3x3 channel rows' instructions per MAC in their outputs' loop stepping one column: per two outputs 3 LDRD of
inputs, 3 of weights, 12 MACs, two requantizations (LSL, SMMULR, ASR, SUB, SSAT, STRB) and the loop's (cortex-m4f,
38-39 instructions; the terms below fitted to mobilenet_v2_050_64_int8's 3x3 layers on 32x32x16 and 16x16x96)."""
ROWS_STEP_PER_MAC = 2.6
"""... stepping more columns (per output and window row an LDR, SMLAD, LDRSH and SMLABB: estimated)."""
ANY_QUAD_WORD = 5.0
ANY_QUAD_ROW = 2.0
ANY_QUAD = 74.0
"""Any window's rows stepping one column, per four adjacent outputs (a quad): per window row and word pair (two
taps) an LDR of the inputs, an LDRD of the weights and four SMLAD; per window row its pointer and the first pair's
LDR; per quad four requantizations, the sums started and the registers the loop spills (cortex-m4f, fitted with
ANY_ROW and ANY_CHANNEL to efficientnet_lite_w030_112_int8's 5x5 layers on 14x14x96, 7x7x144 and 4x4x336: 164
instructions a quad of a 5x5 window, 1.6 per MAC; since the doubled sums, 5 fewer a quad: 14x14x96 1,170,346 ->
1,143,467)."""
ANY_SINGLE_WORD = 4.0
ANY_SINGLE_ROW = 3.0
ANY_SINGLE = 14.0
"""... one output at a time (stepping more columns, or an output row of fewer than four): per window row and word
pair an LDR of the inputs, one of the weights, an SMLAD and the loop's; per window row its pointer and the loop's;
per output one requantization and the loop's (efficientnet_lite_w030_112_int8's 5x5 layer at stride 2 on 14x14x48:
about 91 a 5x5 output)."""
ANY_ROW_WINDOW_ROW = 25.0
ANY_ROW = 81.0
"""Any window's rows, per output row besides its outputs and widened rows: per window row its pointer (the ring's
slot) and the ring's step, and the row's set-up (fitted)."""
ANY_CHANNEL_WORD = 12.0
ANY_CHANNEL = 113.0
"""Any window's rows, per channel: per word pair of the window packed (its taps copied into a frame of zeros, two
word loads and stores), and the channel's bias, multiplier and shift and the ring's first rows (fitted)."""
WIDEN_PER_ELEMENT = 2.75
"""A band element's instructions: four a step of four LDRSB, two PKHBT, two STR and the loop's three."""
ROW_SETUP = 110
"""An output row's instructions besides its outputs and widened rows (the ring's row pointers, the loops' set-up
and the registers they spill: fitted)."""
CHANNEL_SETUP = 140
"""A channel's instructions before its rows: its nine weights packed, bias, multiplier and shift (fitted)."""
ROWS_CODE_BYTES = 210
"""The code the 3x3 channel rows add to a kernel they take, priced as if every such kernel were the bundle's only
one: the helper's one copy (cortex-m4f 936 B) and the kernel's call (54 B) against the tiles' inlined kernel
(752-784 B; a second kernel the rows take saves about 730 B)."""
ANY_CODE_BYTES = 1500
"""... and the rows of any other window: the helper's one copy (cortex-m4f 2,270 B with its three unrolled quads,
1,090 B where a bundle's calls take one width) and the kernel's call (74 B) against the tiles' inlined kernel (at
least a 3x3 one's 836 B; a 5x5 one's 1,356-1,532 B)."""


def window_words(kw: int) -> int:
    """The int32 word pairs a window row of `kw` columns takes in the helper of any window (``pack_window``): each
    two taps' (w[2t], w[2t + 1]) and (w[2t - 1], w[2t]), an even `kw` taking one zero tap more, and at least two
    (the helper unrolls two to four)."""
    return max(2, ((kw | 1) + 1) // 2)


def rows_band_bytes(in_w: int, out_w: int, left: int, stride_w: int, dilation_h: int,
                    window: tuple[int, int] = (SIDE, SIDE)) -> tuple[int, int]:
    """The band's (pitch in int16 elements, bytes the kernel declares) for an image `in_w` columns wide, `out_w`
    outputs a row `left` columns of padding ahead, stepping `stride_w` columns, rows `dilation_h` apart, of a
    `window` (kh, kw): the ring's (kh - 1) * dilation_h + 1 rows of an even pitch holding the padded image row and
    every output's window word pairs (`window_words`: the 3x3 one's two pairs), one int16 more (the helper starts the
    ring at a 4-byte boundary), and for any window but 3x3 its packed weights (kh rows of twice `window_words`
    int32)."""
    kh, kw = window
    words = window_words(kw)
    pitch = max(left + in_w, (out_w - 1) * stride_w + 2 * words)
    pitch += pitch % 2
    packed = 0 if window == (SIDE, SIDE) else kh * 4 * words
    return pitch, (((kh - 1) * dilation_h + 1) * pitch + packed + 1) * 2


def rows_instructions(in_h: int, in_w: int, channels: int, out_h: int, out_w: int, stride_w: int,
                      window: tuple[int, int] = (SIDE, SIDE)) -> float:
    """The channel rows' instructions (estimated from the terms above) for a layer of these shapes and `window`
    (kh, kw)."""
    kh, kw = window
    common = in_h * in_w * WIDEN_PER_ELEMENT + out_h * ROW_SETUP + CHANNEL_SETUP
    if window == (SIDE, SIDE):
        per_mac = ROWS_PER_MAC if stride_w == 1 else ROWS_STEP_PER_MAC
        return channels * (out_h * out_w * SIDE * SIDE * per_mac + common)
    words = window_words(kw)
    quads = -(-out_w // 4) if stride_w == 1 and out_w >= 4 else 0
    singles = 0 if quads else out_w
    per_row = (quads * (kh * (words * ANY_QUAD_WORD + ANY_QUAD_ROW) + ANY_QUAD)
               + singles * (kh * (words * ANY_SINGLE_WORD + ANY_SINGLE_ROW) + ANY_SINGLE)
               + kh * ANY_ROW_WINDOW_ROW + ANY_ROW)
    return channels * (out_h * per_row + in_h * in_w * WIDEN_PER_ELEMENT + kh * words * ANY_CHANNEL_WORD
                       + ANY_CHANNEL)


def tiles_instructions(outputs: int, taps: int) -> float:
    """The four-channel tiles' instructions (estimated: TILES_PER_TAP, TILES_PER_OUTPUT) for `outputs` outputs of a
    window of `taps` taps."""
    return outputs * (taps * TILES_PER_TAP + TILES_PER_OUTPUT)


def rows_pay(in_h: int, in_w: int, channels: int, out_h: int, out_w: int, stride_w: int,
             window: tuple[int, int] = (SIDE, SIDE)) -> bool:
    """Whether the channel rows of `window` (kh, kw) save more instructions per call against the tiles
    (`tiles_instructions`) than the code they add costs at the code price (ROWS_CODE_BYTES for the 3x3 helper,
    ANY_CODE_BYTES for any other window's)."""
    tiles = tiles_instructions(out_h * out_w * channels, window[0] * window[1])
    saved = tiles - rows_instructions(in_h, in_w, channels, out_h, out_w, stride_w, window)
    code = ROWS_CODE_BYTES if window == (SIDE, SIDE) else ANY_CODE_BYTES
    return saved > code * INSTRUCTIONS_PER_BYTE


def _rows_geometry(shape: Sequence[int], window: Sequence[int], strides: Sequence[int], padding: Sequence[int],
                   dilation: Sequence[int], band_bytes: int) -> Optional[tuple[str, tuple[int, ...], int]]:
    """The helper's op (ROWS_OP for a 3x3 window, else ANY_OP), its sizes (`ROWS_ACCESS`'s in_h .. ring, and kh, kw
    for ANY_OP) and the band's declared bytes for a layer of these shapes (input (H, W, C), window (KH, KW),
    strides, padding (top, left, bottom, right), dilation) whose operands fit (`dsp_operands_fit`), or None where
    the rows do not take it (dilated along columns, more than MAX_KH window rows, no output, the band over
    `band_bytes`, or the rows do not pay: `rows_pay`)."""
    (in_h, in_w, channels), (kh, kw) = (int(d) for d in shape), (int(d) for d in window)
    window = (kh, kw)
    if int(dilation[1]) != 1 or kh > MAX_KH or kw > MAX_KW:
        return None
    top, left, bottom, right = (int(p) for p in padding)
    stride_h, stride_w, dilation_h = int(strides[0]), int(strides[1]), int(dilation[0])
    ring = (kh - 1) * dilation_h + 1
    out_h = (in_h + top + bottom - ring) // stride_h + 1
    out_w = (in_w + left + right - kw) // stride_w + 1
    pitch, size = rows_band_bytes(in_w, out_w, left, stride_w, dilation_h, window)
    if out_h < 1 or out_w < 1 or size > band_bytes \
            or not rows_pay(in_h, in_w, channels, out_h, out_w, stride_w, window):
        return None
    sizes = (in_h, in_w * channels, channels, out_h, out_w * channels, top, left, pitch, stride_h, stride_w, ring)
    if window == (SIDE, SIDE):
        return ROWS_OP, sizes, size
    return ANY_OP, (*sizes, kh, kw), size


def rows_take(shape: Sequence[int], window: Sequence[int], strides: Sequence[int], padding: Sequence[int],
              dilation: Sequence[int], bias_bytes: int, band_bytes: int = BAND_BYTES) -> bool:
    """Whether `own_depthwise` runs a layer of these shapes (arguments as
    `depthwise_runs.pixel_tiles_take`'s) as channel rows where its operands fit: the rows' one choice
    (`_rows_geometry`), which the int8 lowering reads to keep such a layer's weights int8 (the rows read either
    width; widened ones would cost a byte a weight of flash for nothing: `backends.backend.KernelSchedules.
    depthwise_rows_take`)."""
    return _rows_geometry(shape, window, strides, padding, dilation, band_bytes) is not None


def channel_rows(data: te.Tensor, weight: te.Tensor, bias: Optional[te.Tensor], *, input_zero_point: int,
                 output: _Stage, strides: Sequence[int], padding: Sequence[int], dilation: Sequence[int],
                 multiplier: Optional[te.Tensor] = None, shift: Optional[te.Tensor] = None,
                 zero_point_in_bias: bool = False, band_bytes: int = BAND_BYTES) -> Optional[te.Tensor]:
    """An int8 DEPTHWISE_CONV_2D (operands and keywords as `tvm_ext.kernels.depthwise_conv2d_int8`'s: weight
    (KH, KW, C), int8 or int16) as one call of the channel rows (module docstring) with its band within `band_bytes`
    of stack, or None where it does not fit or pay."""
    if not (str(weight.dtype) in ("int8", "int16")
            and dsp_operands_fit(data, weight, bias, output, multiplier, shift, zero_point_in_bias)):
        return None
    geometry = _rows_geometry(tuple(int(d) for d in data.shape[1:]), tuple(int(d) for d in weight.shape[:2]),
                              strides, padding, dilation, band_bytes)
    if geometry is None:
        return None
    op, sizes, size = geometry
    (in_h, in_w, channels), (kh, kw) = (int(d) for d in data.shape[1:]), (int(d) for d in weight.shape[:2])
    top, left, bottom, right = (int(p) for p in padding)
    out_shape = ((in_h + top + bottom - (kh - 1) * int(dilation[0]) - 1) // int(strides[0]) + 1,
                 (in_w + left + right - (kw - 1) * int(dilation[1]) - 1) // int(strides[1]) + 1, channels)
    weight_bytes, bias_bytes = (1 if str(weight.dtype) == "int8" else 2), (4 if str(bias.dtype) == "int32" else 2)

    def body(ins, outs) -> tirx.Stmt:
        source, weights, biases, multipliers, shifts = ins
        index = str(outs[0].shape[0].ty.dtype)
        band = tirx.decl_buffer((size // 2,), "int16", name="band", scope="local")
        zero = tirx.const(0, index)
        call = tirx.Evaluate(tirx.call_intrin(
            "int32", op, element_address(outs[0], zero), element_address(source, zero),
            element_address(weights, zero), tirx.const(weight_bytes, "int32"),
            element_address(biases, zero), tirx.const(bias_bytes, "int32"),
            element_address(multipliers, zero), element_address(shifts, zero), band.access_ptr("rw"),
            tirx.const(output.zero_point, "int32"), tirx.const(input_zero_point, "int32"),
            *(tirx.const(v, "int32") for v in sizes)))
        return tirx.SeqStmt([tirx.AllocBuffer(band), call])

    return extern_from_zero((1, *out_shape), [data, weight, bias, multiplier, shift], body,
                            "depthwise_conv2d_int8_rows")


def own_depthwise(data: te.Tensor, weight: te.Tensor, bias: Optional[te.Tensor], *, band_bytes: int = BAND_BYTES,
                  **keywords) -> Optional[te.Tensor]:
    """The DSP cores' own kernel of an int8 DEPTHWISE_CONV_2D (`backends.backend.KernelSchedules.
    few_channel_depthwise`; operands and keywords as `tvm_ext.kernels.depthwise_conv2d_int8`'s), its band within
    `band_bytes` of stack: the channel rows where they fit and pay, else `depthwise_runs.few_channel_depthwise`'s
    forms (channels not whole tiles of four), else None."""
    rows = channel_rows(data, weight, bias, band_bytes=band_bytes, **keywords)
    return rows if rows is not None else few_channel_depthwise(data, weight, bias, band_bytes=band_bytes, **keywords)


@functools.cache
def own_for_kernel_stack(kernel_stack_bytes: int) -> tuple[Callable[..., Optional[te.Tensor]],
                                                            Callable[..., bool], Callable[..., bool]]:
    """`own_depthwise`, `depthwise_runs.pixel_tiles_take` and `rows_take` with the band of a profile's
    `kernel_stack_bytes` (`depthwise_runs.band_bytes_of`, the runs' and the rows' one budget): one triple of
    functions per budget, so that a compile's layers share their kernels (the int8 lowering keys its chosen kernel
    by the function: `tvm_ext.transform.int8.binary.first_fitting`)."""
    band = band_bytes_of(kernel_stack_bytes)
    return (functools.partial(own_depthwise, band_bytes=band), functools.partial(pixel_tiles_take, band_bytes=band),
            functools.partial(rows_take, band_bytes=band))
