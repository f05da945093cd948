"""The DSP cores' kernel of an int8 convolution whose window reads few input channels: a CONV_2D on one to
MAX_CHANNELS input channels (kws_ref_model's 10x4 stem on one, a vision model's RGB stem on three) or a
DEPTHWISE_CONV_2D of one input channel, which the frontend imports as that convolution (micro_speech's 10x8
depthwise of multiplier 8), as one call of `<prefix>_window1_conv_s8`
(`backends.cortex_m.helpers.templates.window1_conv.h.in`): the kernel the int8 lowering writes for such a
convolution where the backend gives one (`backends.backend.KernelSchedules.few_channel_conv`).

Why its own kernel: with few input channels each output pixel's window is a few int8 taps shared by every output
channel (27 for a 3x3 RGB window), so the generic schedule's per-pixel copy and one-pixel channel tiles re-widen
both the window and every weight word per channel tile (23 instructions per 16 MACs, plus the copy under a per-tap
guard at the border: kws's stem 2.3 instructions per MAC, micro_speech's 2.6, an RGB 3x3 stride-2 stem 2.4-2.6).
The helper widens each pixel's window once (its taps in the weights' order: rows of columns of channels) and reads
and widens each weight word once for four pixels (13 instructions per 16 MACs), whatever the window size, channel
count, stride, dilation, padding and output channel count (the geometry is the call's arguments). A window whose
taps are not a multiple of four is summed over whole groups where the weights' zero padding reaches them
(`border_window.copied_window_length`: 27 taps as 28), not with one-tap tails. Its scratch (the four pixels'
widened windows, `window1_scratch_words`) is a local array of the kernel (the stack), not an arena buffer.

Chosen by shape: an int8 input of one image with at most MAX_CHANNELS channels, OHWI weights (any window), int32 or
int16 biases with the input zero point folded in, per-channel multipliers and shifts whose requantization is
TFLite's double rounding on small sums and right shifts only ("double_small", the DSP epilogue's), no activation
narrower than int8, four output pixels or more and a window of MIN_TAPS to MAX_TAPS taps; any other convolution
(`few_channel_conv` gives None) keeps the generic kernel.
"""

from __future__ import annotations

import enum
from math import prod
from typing import Optional, Protocol, Sequence

from tvm import te, tirx

from backends.cortex_m.helpers.window1_conv_c import (WINDOW1_HELPERS, window1_helper_name, window1_lut_helper_name,
                                                      window1_scratch_words)
from tvm_ext.tir.extern_stage import element_address, extern_from_zero
from tvm_ext.tir.helper_access import Arg, Axis, HelperAccess, PointerAccess
from tvm_ext.tir.helper_calls import LUT_ENTRIES, register_helper_call, register_lookup_form

WINDOW1_OP = "tvm_ext.window1_conv_s8"
# The call (out, x, w, bias, multiplier, shift, q, in_h, in_w, in_c, pitch, kh, kw, stride_h, stride_w, dilation_h,
# dilation_w, pad_top, pad_left, out_w, pixels, channels, pad_value, zero_point, taps, w_channel_stride, bias_bytes):
# out[i * channels + c] for i < pixels, c < channels; x the in_h rows of pitch (in_w * in_c) bytes;
# w[c * w_channel_stride + t] for t < taps; bias, multiplier and shift[c]. q is the kernel's own local array, never a
# parameter.
WINDOW1_ACCESS = HelperAccess((
    PointerAccess(0, (Axis(Arg(20), Arg(21)), Axis(Arg(21), 1))),
    PointerAccess(1, (Axis(Arg(7), Arg(10)), Axis(Arg(10), 1))),
    PointerAccess(2, (Axis(Arg(21), Arg(25)), Axis(Arg(24), 1))),
    *(PointerAccess(pointer, (Axis(Arg(21), 1),)) for pointer in (3, 4, 5)),
))
register_helper_call(WINDOW1_OP, WINDOW1_HELPERS, window1_helper_name, WINDOW1_ACCESS)
WINDOW1_LUT_OP = "tvm_ext.window1_conv_lut_s8"
"""The same call with the address of a 256-entry int8 table after its arguments: each output stored as
table[value + 128] (a LEAKY_RELU fused after the convolution: `tvm_ext.transform.fold_lookups`). Measured on
cortex-m4f: yolo_tiny_80_int8's 3x3 RGB stem to 12 channels with its LEAKY_RELU, two calls (4,180,936 + 499,694
instructions) -> one (4,286,543), the helper 696 -> 724 B, the lookup kernel's 72 B gone."""
register_helper_call(WINDOW1_LUT_OP, WINDOW1_HELPERS, window1_lut_helper_name, HelperAccess((
    *WINDOW1_ACCESS.pointers, PointerAccess(27, (Axis(LUT_ENTRIES, 1),)))))
register_lookup_form(WINDOW1_OP, WINDOW1_LUT_OP)

MIN_TAPS = 9
"""The fewest taps of a window the helper takes: per output channel and group of four pixels it spends about 50
instructions besides its groups (the sums' start, the register spills around the assembly loop, four outputs'
requantization), which a short window does not pay back. Measured on cortex-m4f (generic kernel -> helper):
kws_ref_model's 10x4 stem (40 taps) 732,762 -> 443,618 and micro_speech's 10x8 (80 taps) 840,841 -> 509,392; since
the helper's cheaper gather and epilogue, vit_tiny_16_int8's 2x2 stride-2 patches of three channels (12 taps, 48
channels) 122,676 -> 76,612 (the model 3,570,933 -> 3,524,869, its code 6,212 -> 6,316 B: 443 instructions a byte,
past the code price) and person_detect's 3x3 stride-2 depthwise of one channel (9 taps, 8 channels) 648,309 ->
587,181 (the model 11,658,852 -> 11,597,724, its code 11,560 -> 11,316 B; before them it had measured 728,708 ->
775,672, which had set the threshold at 16). Windows of fewer taps are not measured."""

MAX_TAPS = 256
"""The most taps of a window the helper takes: its scratch is a stack array of `window1_scratch_words(taps)` int32
words (2,320 B at 256 taps; kws_ref_model's 40 taps 376 B, micro_speech's 80 taps 736 B), so a larger window runs the
generic kernel, whose stack does not grow with the window. It also keeps the helper's contract (taps <= 2^16: its
running sums cannot overflow)."""

MAX_CHANNELS = 4
"""The most input channels a window the helper takes may read: a few-channel window (an RGB stem's three) is
short rows of channel runs shorter than the other DSP kernels' words, which they copy per pixel and widen per
channel tile. Measured on cortex-m4f (instructions of the call, generic kernel -> helper): three channels, 3x3
stride 2 to 16 channels (mobilenet_v2_050_64_int8's stem) 1,103,757 -> 827,589, to 8 (vww_96_int8's) 1,278,558 ->
1,114,888, 3x3 stride 1 to 12 (yolo_tiny_80_int8's, its LEAKY_RELU then a call of its own: 499,694) 5,729,182 ->
4,180,936; two channels, 5x5 to 13 channels 2,400,136 -> 708,966 but 3x3 stride 2 to 8 on a 24x24 image 68,136 ->
71,248 (few output channels to share each gathered window); four, 3x3 stride 2 to 16 187,076 -> 143,252. Five or
more are not measured: they keep the generic kernel."""


class _Activation(Protocol):
    low: int
    high: int


class _Stage(Protocol):
    """What this kernel reads of `tvm_ext.kernels.requantize.OutputStage` (not imported: backends.cortex_m imports no
    tvm_ext.kernels: tests/test_import_cycles.py)."""

    zero_point: int
    activation: _Activation
    rounding: enum.Enum
    right_shift_only: bool
    small_accumulator: bool


def _fits(data: te.Tensor, bias: Optional[te.Tensor], stage: _Stage, multiplier: Optional[te.Tensor],
          shift: Optional[te.Tensor], zero_point_in_bias: bool) -> bool:
    """Whether the helper computes this convolution's outputs: one int8 image of at most MAX_CHANNELS channels,
    int32 or int16 biases with the input zero point folded in (raw int8 inputs), per-channel constants of the
    "double_small" requantization and the whole int8 range after it (see the module docstring)."""
    batch, _, _, channels = (int(d) for d in data.shape)
    return (str(data.dtype) == "int8" and batch == 1 and channels <= MAX_CHANNELS and bias is not None
            and str(bias.dtype) in ("int32", "int16") and zero_point_in_bias and multiplier is not None
            and shift is not None and stage.rounding.value == "double" and stage.right_shift_only
            and stage.small_accumulator and stage.activation.low <= -128 and stage.activation.high >= 127)


def few_channel_conv(data: te.Tensor, weight: te.Tensor, bias: Optional[te.Tensor], *, input_zero_point: int,
                     output: _Stage, strides: Sequence[int], padding: Sequence[int], dilation: Sequence[int],
                     multiplier: Optional[te.Tensor] = None, shift: Optional[te.Tensor] = None,
                     zero_point_in_bias: bool = False, weight_layout: Optional[enum.Enum] = None,
                     paired_weights: bool = False, kernel_size: Optional[Sequence[int]] = None,
                     units: Optional[int] = None) -> Optional[te.Tensor]:
    """An int8 CONV_2D (operands and keywords as `tvm_ext.kernels.conv2d_int8`'s) whose window reads few input
    channels as a TE extern stage of one helper call, or None where the helper does not fit it (module docstring):
    the weights OHWI ([O, KH, KW, I]) or OHWI_PADDED ([O, Kp], each channel's taps then zeros); with ``units``, the
    output's channels, the weights' rows beyond them (zero rows padding them to the dual MAC's tiles, which the
    generic kernel's channel loop takes) are not read."""
    if paired_weights or not _fits(data, bias, output, multiplier, shift, zero_point_in_bias):
        return None
    layout = getattr(weight_layout, "name", None)  # tvm_ext.kernels.WeightLayout's
    if layout == "OHWI":
        kh, kw = (int(d) for d in weight.shape[1:3])
    elif layout == "OHWI_PADDED" and kernel_size is not None:
        kh, kw = (int(d) for d in kernel_size)
    else:
        return None
    channels = int(weight.shape[0]) if units is None else units
    w_channel_stride = prod(int(d) for d in weight.shape[1:])
    _, in_h, in_w, in_c = (int(d) for d in data.shape)
    window = kh * kw * in_c
    # the taps summed: the window's, or whole groups of four where the weights' zeros reach them (the helper's
    # taps past the window multiply 0), which spares the helper its one-tap tails (a tail tap costs two thirds
    # of a group of four)
    whole = -(-window // 4) * 4
    taps = whole if w_channel_stride >= whole else window
    out_h = (in_h + padding[0] + padding[2] - (kh - 1) * dilation[0] - 1) // strides[0] + 1
    out_w = (in_w + padding[1] + padding[3] - (kw - 1) * dilation[1] - 1) // strides[1] + 1
    # the helper's groups of four pixels; a window that pays for its gathering and whose scratch fits the stack
    if out_h * out_w < 4 or not MIN_TAPS <= window <= taps <= MAX_TAPS:
        return None
    sizes = [in_h, in_w, in_c, in_w * in_c, kh, kw, strides[0], strides[1], dilation[0], dilation[1], padding[0],
             padding[1], out_w, out_h * out_w, channels, input_zero_point, output.zero_point, taps, w_channel_stride,
             4 if str(bias.dtype) == "int32" else 2]

    def build(ins, outs):
        index = str(outs[0].shape[0].ty.dtype)
        zero = tirx.const(0, index)
        scratch = tirx.decl_buffer((window1_scratch_words(taps),), "int32", name="window1_pairs", scope="local")
        call = tirx.Evaluate(tirx.call_intrin(
            "int32", WINDOW1_OP, *(element_address(buffer, zero) for buffer in (outs[0], *ins)),
            scratch.access_ptr("w"), *(tirx.const(int(size), "int32") for size in sizes)))
        return tirx.SeqStmt([tirx.AllocBuffer(scratch), call])

    return extern_from_zero((1, out_h, out_w, channels), [data, weight, bias, multiplier, shift], build,
                            "conv2d_int8_few_channels")
