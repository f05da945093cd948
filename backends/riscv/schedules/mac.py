"""The int8 window MAC of RV32 cores, reached from a scheduled CONV_2D or FULLY_CONNECTED kernel, and their
depthwise MAC, reached from a scheduled DEPTHWISE_CONV_2D kernel.

The reduction of such a kernel tiled to MAC_CHANNELS (8) output channels (`tvm_ext.schedule.kernel_schedule`)
becomes one call of `<prefix>_mac_s8x8` (`backends/riscv/helpers/templates/mac_s8x8.h.in`) per output pixel
and channel tile, or of `<prefix>_mac_s8x2x8` per two pixels (each weight loaded feeds both) where the
schedule pairs pixels (`backends.riscv.schedules`), `<prefix>_mac_s8x2x8_row` (its sixteen sums in registers)
where the window is one row (a 1x1 convolution's), where the window has the dual MAC's geometry
(`backends.cortex_m.schedules.dual_mac`: `window_geometry`): int32 `acc += int32(x) * int32(w)` over int8 x and w, the input read as `rows` runs of
`row_len` contiguous bytes `x_row_stride` apart, each channel's weights one contiguous run (OHWI), no padding
test, and at least MIN_REDUCTION MACs per output. Each channel's sum is added in the same order but for its
groups of two or four products: integer sums, bit-exact.

A FULLY_CONNECTED or CONV_2D kernel given paired weights (`tvm_ext.kernels.dense.pair_weights`: two
channels' int8 weights as one int32 word, where the backend asks for them, `KernelSchedules.paired_weights`)
accumulates each tile of MAC_CHANNELS channels in one call of `<prefix>_mac_s8x8_pairs`
(`templates/mac_s8x8_pairs.h.in`), or of `<prefix>_mac_s8x2x8_pairs` per two pixels where the schedule pairs them,
their `_rows` forms where a window's rows lie apart in the input (a KxK window read in place; a padded border's
copied window is one run): one multiply of an input by a word computes both channels' products (rv32imc, ad01_int8:
896,916 -> 723,783 instructions, 3.4 -> 2.7 per MAC; pretrainedResnet_quant, its 3x3 convolutions: 41,001,517
-> 36,114,964), for twice the paired weights' bytes. Integer sums: bit-exact.

A depthwise reduction tiled to MAC_CHANNELS channels (the window loops, then the eight channels innermost)
becomes one call of `<prefix>_depthwise_mac_s8x8` (`templates/depthwise_mac_s8x8.h.in`: one out-of-line function
per bundle) per output pixel and channel tile where input, weights and accumulators are eight consecutive channels
at every tap (a depth multiplier of 1) and the taps step by constant strides: the interior's windows and a padded
border's clipped ones alike; the border's taps outside the image (the padding value times the weights) are calls of
`<prefix>_depthwise_pad_s8x8` (the shared padding call's arguments, `helium_depthwise.padding_replacement`). Each
channel's sum is added in the same order but for the padding's products, added as the padding value times their
weights' sum: integer sums, bit-exact. A pixel's loop over those tiles then becomes one call of the fused depthwise
tiles (`templates/depthwise_tiles_s8x8.h.in`, `RISCV_DEPTHWISE_TILES`): an interior pixel's, or a border pixel's
(its clipped window's and padding's calls taken in).

A channel tile's requantization loop of the "double_small" rounding becomes one call of
`<prefix>_requantize_small_s8` (`templates/requantize_small.h.in`; `RISCV_EPILOGUE`, matched by
`backends.cortex_m.schedules.requantize_epilogue`): the same integer steps, bit-exact.
"""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Optional

import tvm_ffi
from tvm import s_tir, tirx
from tvm.ir import Range, TensorLoad

from backends.bias_forms import by_bias
from backends.code_price import INSTRUCTIONS_PER_BYTE
from backends.cortex_m.helpers.helium_c import choose_helper_name, fc_rows_helper_name, requantize_s8_helper_name
from backends.cortex_m.schedules.common_tails import TailChoice
from backends.cortex_m.schedules.depthwise_mac import depthwise_call_block, depthwise_mac_access, window_tile_call
from backends.cortex_m.schedules.depthwise_tiles import BORDER_ACCESS, DEPTHWISE_TILES_ACCESS, TileHelpers
from backends.cortex_m.schedules.dual_mac import _whole as whole_region
from backends.cortex_m.schedules.dual_mac import (AccessOffsets, MacReduction, _load_of, accessed_buffer,
                                                 accumulation, channel_tile, helper_call_block, int8_data_update,
                                                 mac_reduction, mac_window, window_call_block, window_mac_2px_access,
                                                 window_mac_access)
from backends.cortex_m.schedules.helium_depthwise import MAC_ACCESS as HELIUM_MAC_ACCESS
from backends.cortex_m.schedules.helium_depthwise import PAD_ACCESS, depthwise_channel_tiles, padding_replacement
from backends.cortex_m.schedules.fc_rows import FcRowHelpers, fc_rows_access
from backends.cortex_m.schedules.conv_tiles import CONV_TILES_ACCESS as DSP_TILES_ACCESS
from backends.cortex_m.schedules.conv_tiles import (ConvTileHelpers, LoopOffsets, TileWindow, call_of, op_executions,
                                                   pointee, zeroed_stores)
from backends.cortex_m.schedules.pair_tiles import (HELIUM_PAIR_TILES_ACCESS, PairTileHelpers, PairWindow,
                                                   channel_strided_args, channel_strided_window)
from backends.cortex_m.schedules.tiles_16x8 import Tiles16x8Ops, register_tiles_16x8_ops
from backends.cortex_m.schedules.requantize_epilogue import (REQUANTIZE_LUT_ACCESS, REQUANTIZE_S8_ACCESS,
                                                              EpilogueHelper, stored_channels)
from backends.cortex_m.helpers.dual_mac_interleaved_c import dual_mac_interleaved_helper_name
from backends.cortex_m.schedules.interleaved_mac import INTERLEAVED_MAC_ACCESS, interleaved_mac_call
from backends.riscv.helpers import (FC_ROWS_FORM, FOUR_CHANNELS, INTERLEAVED_MAC_HELPERS, MAC_CHANNELS, RISCV_HELPERS,
                                    RISCV_TILES_16X8_HELPERS,
                                    conv_tiles4_helper_name, conv_tiles_helper_name, depthwise_mac_helper_name,
                                    depthwise_pad_helper_name, depthwise_tiles_helper_name, mac4_helper_name,
                                    mac_2px_helper_name, mac_2px_n_helper_name, mac_2px_row_helper_name,
                                    mac_helper_name,
                                    mac_pairs_2px_helper_name, mac_pairs_helper_name, mac_tiled_helper_name,
                                    pair_tiles_helper_name,
                                    requantize_helper_name)
from packager.fixed_point_c import REQUANTIZE_OPS, RIGHT_SHIFT_ONLY, SMALL_RIGHT_SHIFT
from tvm_ext.tir.helper_access import Arg, Axis, HelperAccess, PointerAccess, register_address_choice
from tvm_ext.tir.index_expr import substitute_index
from tvm_ext.tir.tir_walk import map_child_stmts, walk
from tvm_ext.tir.helper_calls import register_helper_call
from tvm_ext.tir.tir_walk import with_root_loops_replaced

MAC_OP = "tvm_ext.riscv_mac_s8x8"
MAC_ACCESS = window_mac_access(MAC_CHANNELS)  # the dual MAC's call, over eight channels
register_helper_call(MAC_OP, RISCV_HELPERS, mac_helper_name, MAC_ACCESS)
MAC4_OP = "tvm_ext.riscv_mac_s8x4"
"""The window MAC of a four-channel tile (`RiscvMacSchedules.channel_tiles`), one out-of-line copy per bundle."""
register_helper_call(MAC4_OP, RISCV_HELPERS, mac4_helper_name, window_mac_access(FOUR_CHANNELS))
INTERLEAVED_MAC_OP = "tvm_ext.riscv_dual_mac_s8x4_interleaved"
"""The MAC over interleaved int8 weights (`templates/mac_s8x4_interleaved.h.in`): the DSP helper's call, accesses and
name, RISC-V's C (`interleaved_mac_calls`)."""
register_helper_call(INTERLEAVED_MAC_OP, INTERLEAVED_MAC_HELPERS, dual_mac_interleaved_helper_name,
                     INTERLEAVED_MAC_ACCESS)

CHOOSE_OP = "tvm_ext.riscv_choose_address"
"""``riscv_choose_address(inside, a, b)``: the address a where inside holds, else b (``<PREFIX>_CHOOSE``,
templates/riscv_common.h.in)."""
register_helper_call(CHOOSE_OP, RISCV_HELPERS, choose_helper_name)
register_address_choice(CHOOSE_OP)
_X, _X_ROW_STRIDE, _ROWS, _ROW_LEN = 1, 3, 5, 6
"""The positions of a window MAC call's (MAC_ACCESS) input address and window sizes among its arguments."""
RISCV_TAIL_CHOICES = {op: TailChoice(CHOOSE_OP, frozenset({_X}), frozenset({_X_ROW_STRIDE, _ROWS, _ROW_LEN}))
                      for op in (MAC_OP, MAC4_OP)}
"""The RV32 schedules' `common_tails` choices (through loops): where a kernel keeps its own channel-tile loop around
the window MAC's call (int8 weights, output channels padded to whole tiles: the last tile's epilogue a scalar loop
under a channel test, which no fused tiles helper takes), an interior pixel's loop (the call on the image in place)
and a border pixel's (on its copied window, one run) become one loop after the test, the call's input address and
window sizes chosen: one inlined copy of the MAC and the epilogue instead of two. rv32imc resnet8_w15_40x24_int8
(3x3 convolutions over 15, 30 and 45 channels, padded to 16, 32, 48), a kernel of 15 channels: 1,832 -> 1,156 B,
8,271,491 -> 7,463,272 instructions (see the bundle figures in `RiscvMacSchedules.epilogue_calls`)."""

MAC_PIXELS = 2  # output pixels of the two-pixel helpers' calls


def _mac_access(weights_per_input: int) -> HelperAccess:
    """The access of a MAC call (acc, x, w, row_len) of eight channels whose weights hold `weights_per_input`
    elements for each input: acc[c] for c < 8, x[k] and w[weights_per_input k + j] for k < row_len."""
    return HelperAccess((
        PointerAccess(0, (Axis(MAC_CHANNELS, 1),)),
        PointerAccess(1, (Axis(Arg(3), 1),)),
        PointerAccess(2, (Axis(Arg(3), weights_per_input), Axis(weights_per_input, 1))),
    ))


def _mac_2px_access(weights_per_input: int) -> HelperAccess:
    """As `_mac_access`, of a two-pixel call (acc_a, acc_b, x, w, row_len, x_pixel_stride): x[p * x_pixel_stride + k]
    for p < MAC_PIXELS."""
    return HelperAccess((
        PointerAccess(0, (Axis(MAC_CHANNELS, 1),)),
        PointerAccess(1, (Axis(MAC_CHANNELS, 1),)),
        PointerAccess(2, (Axis(MAC_PIXELS, Arg(5)), Axis(Arg(4), 1))),
        PointerAccess(3, (Axis(Arg(4), weights_per_input), Axis(weights_per_input, 1))),
    ))


MAC_PAIRS_OP = "tvm_ext.riscv_mac_s8x8_pairs"
PAIR_WORDS = MAC_CHANNELS // 2  # weight words per input: one per channel pair
MAC_PAIRS_ACCESS = _mac_access(PAIR_WORDS)
"""The paired MAC's call (acc, x, w, row_len): acc[c] for c < 8, x[k] and w[4k + p] for k < row_len, p < 4."""
register_helper_call(MAC_PAIRS_OP, RISCV_HELPERS, mac_pairs_helper_name, MAC_PAIRS_ACCESS)

MAC_PAIRS_2PX_OP = "tvm_ext.riscv_mac_s8x2x8_pairs"
MAC_PAIRS_2PX_ACCESS = _mac_2px_access(PAIR_WORDS)
"""The two-pixel paired MAC's call (acc_a, acc_b, x, w, row_len, x_pixel_stride): acc_a[c] and acc_b[c] for c < 8,
x[p * x_pixel_stride + k] for p < 2 and w[4k + p] for k < row_len, p < 4."""
register_helper_call(MAC_PAIRS_2PX_OP, RISCV_HELPERS, mac_pairs_2px_helper_name, MAC_PAIRS_2PX_ACCESS)


MAC_TILED_OP = "tvm_ext.riscv_mac_s8x8_tiled"
MAC_TILED_ACCESS = _mac_access(MAC_CHANNELS)
"""The tiled MAC's call (acc, x, w, row_len): acc[c] for c < 8, x[k] and w[8k + c] for k < row_len, c < 8
(`tvm_ext.kernels.dense.tile_rows`' bytes of one tile)."""
register_helper_call(MAC_TILED_OP, RISCV_HELPERS, mac_tiled_helper_name, MAC_TILED_ACCESS)
MAC_TILED_2PX_OP = "tvm_ext.riscv_mac_s8x2x8_tiled"
MAC_TILED_2PX_ACCESS = _mac_2px_access(MAC_CHANNELS)
"""The two-pixel tiled MAC's call (acc_a, acc_b, x, w, row_len, x_pixel_stride): acc_a[c] and acc_b[c] for c < 8,
x[p * x_pixel_stride + k] for p < 2 and w[8k + c] for k < row_len, c < 8."""
register_helper_call(MAC_TILED_2PX_OP, RISCV_HELPERS, functools.partial(mac_tiled_helper_name, pixels=MAC_PIXELS),
                     MAC_TILED_2PX_ACCESS)


def _window_words(rows: Arg, row_len: Arg, per_input: int = PAIR_WORDS) -> tuple[Axis, ...]:
    """The words w[4 (r * row_len + k) + q] for r < rows, k < row_len, q < 4 (one run of 4 * rows * row_len words)
    as axes of constant or argument strides: the run of rows * row_len offsets four times over, then the four; with
    ``per_input`` n, n words an input (tiled rows' bytes: 8)."""
    return (Axis(rows, row_len), Axis(row_len, 1)) * per_input + (Axis(per_input, 1),)


MAC_TILED_ROWS_OP = "tvm_ext.riscv_mac_s8x8_tiled_rows"
MAC_TILED_ROWS_ACCESS = HelperAccess((
    PointerAccess(0, (Axis(MAC_CHANNELS, 1),)),
    PointerAccess(1, (Axis(Arg(4), Arg(3)), Axis(Arg(5), 1))),
    PointerAccess(2, _window_words(Arg(4), Arg(5), MAC_CHANNELS)),
))
"""The tiled MAC's call over window rows (acc, x, w, x_row_stride, rows, row_len): acc[c] for c < 8,
x[r * x_row_stride + k] and w[8 (r * row_len + k) + c] for r < rows, k < row_len, c < 8 (a CONV_2D's tiled OHWI
weights, `tiled_mac_replacement`); one out-of-line copy per bundle."""
register_helper_call(MAC_TILED_ROWS_OP, RISCV_HELPERS, functools.partial(mac_tiled_helper_name, rows=True),
                     MAC_TILED_ROWS_ACCESS)
RISCV_TAIL_CHOICES[MAC_TILED_ROWS_OP] = TailChoice(CHOOSE_OP, frozenset({_X}), frozenset({3, 4, 5}))
"""Its input address and window sizes (x_row_stride, rows, row_len) chosen as the window MAC's: a padded
convolution's interior pixel and border pixel (its copied window) in one loop."""
MAC_TILED_2PX_ROWS_OP = "tvm_ext.riscv_mac_s8x2x8_tiled_rows"
MAC_TILED_2PX_ROWS_ACCESS = HelperAccess((
    PointerAccess(0, (Axis(MAC_CHANNELS, 1),)),
    PointerAccess(1, (Axis(MAC_CHANNELS, 1),)),
    PointerAccess(2, (Axis(MAC_PIXELS, Arg(7)), Axis(Arg(5), Arg(4)), Axis(Arg(6), 1))),
    PointerAccess(3, _window_words(Arg(5), Arg(6), MAC_CHANNELS)),
))
"""The same of two pixels (acc_a, acc_b, x, w, x_row_stride, rows, row_len, x_pixel_stride): acc_a[c], acc_b[c] for
c < 8, x[p * x_pixel_stride + r * x_row_stride + k] for p < 2, w as the one-pixel call's."""
register_helper_call(MAC_TILED_2PX_ROWS_OP, RISCV_HELPERS,
                     functools.partial(mac_tiled_helper_name, pixels=MAC_PIXELS, rows=True),
                     MAC_TILED_2PX_ROWS_ACCESS)


MAC_PAIRS_ROWS_OP = "tvm_ext.riscv_mac_s8x8_pairs_rows"
MAC_PAIRS_ROWS_ACCESS = HelperAccess((
    PointerAccess(0, (Axis(MAC_CHANNELS, 1),)),
    PointerAccess(1, (Axis(Arg(4), Arg(3)), Axis(Arg(5), 1))),
    PointerAccess(2, _window_words(Arg(4), Arg(5))),
))
"""The paired MAC's call over window rows (acc, x, w, x_row_stride, rows, row_len): acc[c] for c < 8,
x[r * x_row_stride + k] and w[4 (r * row_len + k) + p] for r < rows, k < row_len, p < 4."""
register_helper_call(MAC_PAIRS_ROWS_OP, RISCV_HELPERS, functools.partial(mac_pairs_helper_name, rows=True),
                     MAC_PAIRS_ROWS_ACCESS)

MAC_PAIRS_2PX_ROWS_OP = "tvm_ext.riscv_mac_s8x2x8_pairs_rows"
MAC_PAIRS_2PX_ROWS_ACCESS = HelperAccess((
    PointerAccess(0, (Axis(MAC_CHANNELS, 1),)),
    PointerAccess(1, (Axis(MAC_CHANNELS, 1),)),
    PointerAccess(2, (Axis(MAC_PIXELS, Arg(7)), Axis(Arg(5), Arg(4)), Axis(Arg(6), 1))),
    PointerAccess(3, _window_words(Arg(5), Arg(6))),
))
"""The two-pixel paired MAC's call over window rows (acc_a, acc_b, x, w, x_row_stride, rows, row_len,
x_pixel_stride): acc_a[c], acc_b[c] for c < 8, x[p * x_pixel_stride + r * x_row_stride + k] for p < 2 and
w[4 (r * row_len + k) + q] for r < rows, k < row_len, q < 4."""
register_helper_call(MAC_PAIRS_2PX_ROWS_OP, RISCV_HELPERS, functools.partial(mac_pairs_2px_helper_name, rows=True),
                     MAC_PAIRS_2PX_ROWS_ACCESS)

MAC_2PX_OP = "tvm_ext.riscv_mac_s8x2x8"
MAC_2PX_ACCESS = window_mac_2px_access(MAC_CHANNELS)
register_helper_call(MAC_2PX_OP, RISCV_HELPERS, mac_2px_helper_name, MAC_2PX_ACCESS)
MAC_2PX_ROW_OP = "tvm_ext.riscv_mac_s8x2x8_row"
"""The two-pixel helper of one-row windows: its sixteen sums spill inside the kernels of longer windows."""
register_helper_call(MAC_2PX_ROW_OP, RISCV_HELPERS, mac_2px_row_helper_name, MAC_2PX_ACCESS)
MAC_2PX_N_OPS = {MAC_2PX_OP: "tvm_ext.riscv_mac_s8x2xn", MAC_2PX_ROW_OP: "tvm_ext.riscv_mac_s8x2xn_row"}
"""The two-pixel helpers' forms over their first `channels` sums only (a trailing argument, 1..MAC_CHANNELS), by the
eight-channel op each replaces (`live_channels.live_channel_macs`)."""
register_helper_call(MAC_2PX_N_OPS[MAC_2PX_OP], RISCV_HELPERS, mac_2px_n_helper_name, MAC_2PX_ACCESS)
register_helper_call(MAC_2PX_N_OPS[MAC_2PX_ROW_OP], RISCV_HELPERS, functools.partial(mac_2px_n_helper_name, row=True),
                     MAC_2PX_ACCESS)

DEPTHWISE_MAC_OP = "tvm_ext.riscv_depthwise_mac_s8x8"
"""The depthwise helper, one out-of-line function per bundle: every depthwise kernel's windows, whole or clipped."""
DEPTHWISE_MAC_ACCESS = depthwise_mac_access(MAC_CHANNELS)
register_helper_call(DEPTHWISE_MAC_OP, RISCV_HELPERS, depthwise_mac_helper_name, DEPTHWISE_MAC_ACCESS)

DEPTHWISE_PAD_OP = "tvm_ext.riscv_depthwise_pad_s8x8"
"""The padding helper's call (acc, w, w_row_stride, w_col_stride, rows, cols, value, channels: the shared padding
call's, `backends.cortex_m.schedules.helium_depthwise.PAD_ACCESS`, channels 8): acc[c] for c < 8 and
w[r * w_row_stride + k * w_col_stride + c] for r < rows, k < cols."""
register_helper_call(DEPTHWISE_PAD_OP, RISCV_HELPERS, depthwise_pad_helper_name, PAD_ACCESS)

DEPTHWISE_MAC_N_OP = "tvm_ext.riscv_depthwise_mac_s8xn"
"""The depthwise helper of any channel count (`<prefix>_depthwise_mac_s8xn`: Helium's call, MAC_ACCESS, the count
its last argument), one out-of-line function per bundle: the window calls of a layer whose channels eight does not
divide, held in one tile (`depthwise_whole_tile`)."""
register_helper_call(DEPTHWISE_MAC_N_OP, RISCV_HELPERS, functools.partial(depthwise_mac_helper_name, sized=True),
                     HELIUM_MAC_ACCESS)
DEPTHWISE_PAD_N_OP = "tvm_ext.riscv_depthwise_pad_s8xn"
"""The padding helper of any channel count (`<prefix>_depthwise_pad_s8xn`: PAD_ACCESS, as DEPTHWISE_PAD_OP's)."""
register_helper_call(DEPTHWISE_PAD_N_OP, RISCV_HELPERS, functools.partial(depthwise_pad_helper_name, sized=True),
                     PAD_ACCESS)

REQUANTIZE_OPS_BY_BIAS = by_bias("tvm_ext.riscv_requantize_small_s8")
"""The requantization epilogue's op per bias type (`<prefix>_requantize_small_s8`, `_s8_b16`)."""
for _bias, _op in REQUANTIZE_OPS_BY_BIAS.items():
    register_helper_call(_op, RISCV_HELPERS, functools.partial(requantize_helper_name, bias=_bias),
                         REQUANTIZE_S8_ACCESS)
REQUANTIZE_LUT_OPS_BY_BIAS = by_bias("tvm_ext.riscv_requantize_small_lut_s8")
"""Its form with a lookup table after the requantization per bias type (`<prefix>_requantize_small_lut_s8`,
`_lut_s8_b16`)."""
for _bias, _op in REQUANTIZE_LUT_OPS_BY_BIAS.items():
    register_helper_call(_op, RISCV_HELPERS, functools.partial(requantize_helper_name, bias=_bias, table=True),
                         REQUANTIZE_LUT_ACCESS)
RISCV_EPILOGUE = EpilogueHelper(frozenset({REQUANTIZE_OPS[SMALL_RIGHT_SHIFT]}), REQUANTIZE_OPS_BY_BIAS,
                                REQUANTIZE_LUT_OPS_BY_BIAS)
"""The channel tiles' epilogues the RISC-V helper computes: the "double_small" rounding (nearly every int8 layer's:
its shifts, multipliers and sums bounded at compile time), with or without a lookup table after it, as the DSP
cores' epilogue does."""

RISCV_DUAL_MAC_S16_OUTLINED_OP = "tvm_ext.riscv_dual_mac_s16x4_outlined"
RISCV_TILES_16X8 = Tiles16x8Ops("tvm_ext.riscv_tiles_s16x4", RISCV_DUAL_MAC_S16_OUTLINED_OP,
                                RISCV_DUAL_MAC_S16_OUTLINED_OP)
"""The fused 16x8 tiles' ops on RV32, of RISCV_TILES_16X8_HELPERS (which needs no Cortex-M library); a tile's int16
dual MAC is the out-of-line copy's call from the start (`int16_window_replacement`), not Cortex-M's
DUAL_MAC_S16_OP made one later: an RV32 kernel calls no Cortex-M helper at any step."""
register_tiles_16x8_ops(RISCV_TILES_16X8, RISCV_TILES_16X8_HELPERS)

REQUANTIZE_DOUBLE_OPS_BY_BIAS = by_bias("tvm_ext.riscv_requantize_s8")
"""The epilogue of TFLite's double rounding for any sum and shift per bias type (`<prefix>_requantize_s8`, `_s8_b16`:
the Helium epilogue's names and contract)."""
for _bias, _op in REQUANTIZE_DOUBLE_OPS_BY_BIAS.items():
    register_helper_call(_op, RISCV_HELPERS, functools.partial(requantize_s8_helper_name, bias=_bias),
                         REQUANTIZE_S8_ACCESS)
RISCV_DOUBLE_EPILOGUE = EpilogueHelper(frozenset({REQUANTIZE_OPS["double"], REQUANTIZE_OPS[RIGHT_SHIFT_ONLY]}),
                                       REQUANTIZE_DOUBLE_OPS_BY_BIAS)
"""The channel tiles' epilogues of the other double roundings (a layer whose shifts or sums the "double_small" one
does not take; after RISCV_EPILOGUE's): inlined, TVM's 64-bit scalar steps held ~600-1,300 B per kernel
(vww_96_int8's last 1x1 convolutions on rv32imc), and their pixel pairs' tile loops could not be fused."""

DEPTHWISE_TILES_OPS = by_bias("tvm_ext.riscv_depthwise_tiles_s8x8")
"""The fused depthwise channel tiles helper per bias type (`<prefix>_depthwise_tiles_s8x8`, `_b16`): the call of
`backends.cortex_m.schedules.depthwise_tiles` (out, x, w, bias, multiplier, shift, zero_point, x_row_stride,
x_col_stride, w_row_stride, w_col_stride, rows, cols, channels)."""
for _bias, _op in DEPTHWISE_TILES_OPS.items():
    register_helper_call(_op, RISCV_HELPERS, functools.partial(depthwise_tiles_helper_name, bias=_bias),
                         DEPTHWISE_TILES_ACCESS)
DEPTHWISE_BORDER_OPS = {(bias, "any"): op for bias, op in by_bias("tvm_ext.riscv_depthwise_border_s8x8").items()}
"""The fused depthwise border helper per (bias type, window form "any": one out-of-line copy for every window)
(`<prefix>_depthwise_border_s8x8`, `_b16`): the call of `backends.cortex_m.schedules.depthwise_tiles`' border
helpers (the tiles' arguments, then top, left, inside_rows, inside_cols, value, channels)."""
for (_bias, _), _op in DEPTHWISE_BORDER_OPS.items():
    register_helper_call(_op, RISCV_HELPERS, functools.partial(depthwise_tiles_helper_name, bias=_bias, border=True),
                         BORDER_ACCESS)
BORDER_WINDOW_TAPS = 1 << 16
"""The most taps of a window whose border pixels take the border helper: any window (its taps outside the image read
eight bytes of the padding value, not a copy of the window)."""
RISCV_DEPTHWISE_TILES = TileHelpers(DEPTHWISE_MAC_OP, False, REQUANTIZE_OPS_BY_BIAS, DEPTHWISE_TILES_OPS,
                                    DEPTHWISE_BORDER_OPS, box_op=DEPTHWISE_MAC_OP, pad_op=DEPTHWISE_PAD_OP,
                                    window_taps=BORDER_WINDOW_TAPS, column_as_row=True)
"""The RV32 cores' fused depthwise tiles (`backends.cortex_m.schedules.depthwise_tiles`): an interior pixel's loop
over its tiles of eight channels (the depthwise MAC's window call, the "double_small" epilogue's) as one call of the
out-of-line `<prefix>_depthwise_tiles_s8x8`, every border pixel's (its clipped window's call and its padding's) as
one call of the out-of-line `<prefix>_depthwise_border_s8x8`; a kx1 window called as one row of k taps (one row
loop's pass, not k)."""
RISCV_DEPTHWISE_WHOLE_TILES = replace(RISCV_DEPTHWISE_TILES, mac_op=DEPTHWISE_MAC_N_OP, sized=True,
                                      box_op=DEPTHWISE_MAC_N_OP, pad_op=DEPTHWISE_PAD_N_OP)
"""The same fused helpers for a layer whose channels eight does not divide, held in one tile
(`depthwise_whole_tile`): its window and padding calls name the channel count (DEPTHWISE_MAC_N_OP,
DEPTHWISE_PAD_N_OP), the fused helpers take it, their second tile of eight moved back so that the last ends at the last channel."""

LUT_ENTRIES = 256
DEPTHWISE_TILES_LUT_OPS = by_bias("tvm_ext.riscv_depthwise_tiles_lut_s8x8")
"""The fused depthwise tiles with a lookup table after the requantization per bias type
(`<prefix>_depthwise_tiles_lut_s8x8`, `_b16`): the tiles' call, then the table (256 int8 entries)."""
for _bias, _op in DEPTHWISE_TILES_LUT_OPS.items():
    register_helper_call(_op, RISCV_HELPERS, functools.partial(depthwise_tiles_helper_name, bias=_bias, table=True),
                         HelperAccess((*DEPTHWISE_TILES_ACCESS.pointers,
                                       PointerAccess(14, (Axis(LUT_ENTRIES, 1),)))))
DEPTHWISE_BORDER_LUT_OPS = {(bias, "any"): op
                            for bias, op in by_bias("tvm_ext.riscv_depthwise_border_lut_s8x8").items()}
"""The border form with a lookup table after the requantization per (bias type, "any")
(`<prefix>_depthwise_border_lut_s8x8`, `_b16`): the border call's arguments, then the table."""
for (_bias, _), _op in DEPTHWISE_BORDER_LUT_OPS.items():
    register_helper_call(_op, RISCV_HELPERS, functools.partial(depthwise_tiles_helper_name, bias=_bias, border=True,
                                                               table=True),
                         HelperAccess((*BORDER_ACCESS.pointers, PointerAccess(19, (Axis(LUT_ENTRIES, 1),)))))
RISCV_DEPTHWISE_TILE_FORMS = tuple(
    replace(tiles, requantize=REQUANTIZE_LUT_OPS_BY_BIAS, tiles=DEPTHWISE_TILES_LUT_OPS, border=DEPTHWISE_BORDER_LUT_OPS)
    if table else tiles
    for table in (False, True) for tiles in (RISCV_DEPTHWISE_TILES, RISCV_DEPTHWISE_WHOLE_TILES))
"""Every form of the RV32 fused depthwise tiles, each taking the tile loops of its window call and epilogue: tiles of
eight or one tile of every channel, the requantization alone or with a lookup table after it (a depthwise layer
fused with an activation: mobilenet_v3's hard-swish ones had kept a window call and an epilogue call per tile, and
their borders per-tap calls)."""

FC_ROWS_OPS = by_bias("tvm_ext.riscv_fc_rows_s8x8")
"""The fused row helper of per-tensor FULLY_CONNECTED layers per bias type (`<prefix>_fc_rows_s8x8`, `_b16`)."""
for _bias, _op in FC_ROWS_OPS.items():
    register_helper_call(_op, RISCV_HELPERS, functools.partial(fc_rows_helper_name, bias=_bias, form=FC_ROWS_FORM),
                         fc_rows_access(MAC_CHANNELS, PAIR_WORDS))


def _paired_row(call) -> Optional[tuple[object, object, int]]:
    """(x, w, row_len) of a paired MAC call (acc, x, w, row_len) of a constant row_len, else None."""
    row_len = call.args[3]
    return (call.args[1], call.args[2], int(row_len)) if isinstance(row_len, tirx.IntImm) else None


RISCV_FC_ROWS = FcRowHelpers(MAC_PAIRS_OP, _paired_row, MAC_CHANNELS, PAIR_WORDS,
                             frozenset({REQUANTIZE_OPS[SMALL_RIGHT_SHIFT]}), FC_ROWS_OPS)
"""The RV32 cores': eight channels a tile (four paired words per input), the "double_small" rounding (the
epilogue's, `RISCV_EPILOGUE`)."""

PAIR_TILES_OPS = by_bias("tvm_ext.riscv_pair_tiles_s8x8")
"""The fused pixel-pair channel tiles helper per bias type (`<prefix>_pair_tiles_s8x8`, `_b16`)."""
PAIR_TILES_DOUBLE_OPS = by_bias("tvm_ext.riscv_pair_tiles_double_s8x8")
"""Its form of the double rounding of any sum and shift (RISCV_DOUBLE_EPILOGUE's) per bias type
(`<prefix>_pair_tiles_double_s8x8`, `_b16`)."""
# pair_tiles_s8x8(out, x, w, bias, multiplier, shift, zero_point, x_row_stride, rows, row_len, x_pixel_stride,
# out_pixel_stride, w_tile_stride, tiles): out[p * out_pixel_stride + c] and the epilogue's constants 8 * tiles
# elements; x[p * x_pixel_stride + r * x_row_stride + k]; w tiles runs of a window's words, w_tile_stride apart.
_PER_CHANNEL = (Axis(Arg(13), MAC_CHANNELS), Axis(MAC_CHANNELS, 1))
PAIR_TILES_ACCESS = HelperAccess((
    PointerAccess(0, (Axis(MAC_PIXELS, Arg(11)), *_PER_CHANNEL)),
    PointerAccess(1, (Axis(MAC_PIXELS, Arg(10)), Axis(Arg(8), Arg(7)), Axis(Arg(9), 1))),
    PointerAccess(2, (Axis(Arg(13), Arg(12)), *_window_words(Arg(8), Arg(9)))),
    *(PointerAccess(pointer, _PER_CHANNEL) for pointer in (3, 4, 5)),
))
for _bias, _op in PAIR_TILES_OPS.items():
    register_helper_call(_op, RISCV_HELPERS, functools.partial(pair_tiles_helper_name, bias=_bias),
                         PAIR_TILES_ACCESS)
for _bias, _op in PAIR_TILES_DOUBLE_OPS.items():
    register_helper_call(_op, RISCV_HELPERS, functools.partial(pair_tiles_helper_name, bias=_bias, any_double=True),
                         PAIR_TILES_ACCESS)
PAIR_TILES_ODD_OPS = by_bias("tvm_ext.riscv_pair_tiles_odd_s8x8")
"""The fused pixel pairs' form for windows of rows of any length per bias type (`<prefix>_pair_tiles_odd_s8x8`,
`_b16`: PAIR_TILES_ACCESS)."""
PAIR_TILES_DOUBLE_ODD_OPS = by_bias("tvm_ext.riscv_pair_tiles_double_odd_s8x8")
"""The same of the double rounding of any sum and shift (`<prefix>_pair_tiles_double_odd_s8x8`, `_b16`)."""
for _bias, _op in PAIR_TILES_ODD_OPS.items():
    register_helper_call(_op, RISCV_HELPERS, functools.partial(pair_tiles_helper_name, bias=_bias, odd=True),
                         PAIR_TILES_ACCESS)
for _bias, _op in PAIR_TILES_DOUBLE_ODD_OPS.items():
    register_helper_call(_op, RISCV_HELPERS,
                         functools.partial(pair_tiles_helper_name, bias=_bias, any_double=True, odd=True),
                         PAIR_TILES_ACCESS)

PAIR_TILES_LUT_OPS = by_bias("tvm_ext.riscv_pair_tiles_lut_s8x8")
"""The fused pixel pairs' form with a lookup table after the "double_small" requantization per bias type
(`<prefix>_pair_tiles_lut_s8x8`, `_b16`: PAIR_TILES_ACCESS's call, then the table of LUT_ENTRIES int8 entries; the
epilogue's of a layer fused with an activation, REQUANTIZE_LUT_OPS_BY_BIAS: a LEAKY_RELU convolution's)."""
PAIR_TILES_LUT_ODD_OPS = by_bias("tvm_ext.riscv_pair_tiles_lut_odd_s8x8")
"""The same for windows of rows of any length (`<prefix>_pair_tiles_lut_odd_s8x8`, `_b16`)."""
PAIR_TILES_LUT_ACCESS = HelperAccess((*PAIR_TILES_ACCESS.pointers, PointerAccess(14, (Axis(LUT_ENTRIES, 1),))))
for _ops, _odd in ((PAIR_TILES_LUT_OPS, False), (PAIR_TILES_LUT_ODD_OPS, True)):
    for _bias, _op in _ops.items():
        register_helper_call(_op, RISCV_HELPERS,
                             functools.partial(pair_tiles_helper_name, bias=_bias, odd=_odd, table=True),
                             PAIR_TILES_LUT_ACCESS)


def _paired_window(call, odd: bool = False) -> Optional[PairWindow]:
    """The window of a two-pixel paired MAC call (`<prefix>_mac_s8x2x8_pairs`: acc_a, acc_b, x, w, row_len,
    x_pixel_stride; `_rows`: acc_a, acc_b, x, w, x_row_stride, rows, row_len, x_pixel_stride) of constant sizes
    and rows of even length, or with ``odd`` of odd length (the fused helper's even form has no odd last input's
    step: ~180 bytes of every bundle with fused pairs, none of whose windows in the shared models has odd rows; the
    odd form's copy is only in the bundles that call it), its tile's words one window's (PAIR_WORDS per input), else
    None."""
    sizes = [int(arg) if isinstance(arg, tirx.IntImm) else None for arg in call.args[4:]]
    if None in sizes:
        return None
    x_row_stride, rows, row_len, x_pixel_stride = sizes if len(sizes) == 4 else (0, 1, *sizes)
    if row_len % 2 != odd:
        return None
    return PairWindow(*call.args[:4], x_row_stride, rows, row_len, x_pixel_stride, PAIR_WORDS * rows * row_len)


RISCV_PAIR_TILES = PairTileHelpers(
    (MAC_PAIRS_2PX_ROWS_OP, MAC_PAIRS_2PX_OP), _paired_window, MAC_CHANNELS, None,
    {**{REQUANTIZE_OPS_BY_BIAS[bias]: op for bias, op in PAIR_TILES_OPS.items()},
     **{REQUANTIZE_DOUBLE_OPS_BY_BIAS[bias]: op for bias, op in PAIR_TILES_DOUBLE_OPS.items()},
     **{REQUANTIZE_LUT_OPS_BY_BIAS[bias]: op for bias, op in PAIR_TILES_LUT_OPS.items()}}, None,
    lambda window, out_pixel_stride, tiles: [window.x_row_stride, window.rows, window.row_len, window.x_pixel_stride,
                                             out_pixel_stride, window.w_tile_step, tiles])
"""The RV32 cores' fused pixel pairs (`backends.cortex_m.schedules.pair_tiles`): the two-pixel paired MAC of a KxK
window (`<prefix>_mac_s8x2x8_pairs_rows`) or of a 1x1 convolution's one run (`<prefix>_mac_s8x2x8_pairs`, inlined
with its constant length before), eight channels a tile, the "double_small" epilogue's calls (`RISCV_EPILOGUE`) or
the other double roundings' (`RISCV_DOUBLE_EPILOGUE`: `<prefix>_pair_tiles_double_s8x8`), no scratch. Fusing the
1x1 pairs too, measured on rv32imc (instructions per inference, bundle code bytes):
pretrainedResnet_quant 34,174,634 -> 34,233,621, 9,134 -> 8,744 B; vww_96_int8 28,264,829 -> 28,278,067, 18,278
-> 17,762 B; person_detect 26,361,474 -> 26,903,072, 16,898 -> 13,924 B (its 1x1 layers on 8 and 16 channels
faster, on 32 to 128 ~4 % slower: the window loop of run-time length against the inlined one of constant length);
kws_ref_model 9,205,505 -> 9,223,678, 5,730 -> 5,614 B."""

PAIR_TILES_W8_OPS = by_bias("tvm_ext.riscv_pair_tiles_w8_s8x8")
"""The fused pixel pairs' form for int8 weights as stored per bias type (`<prefix>_pair_tiles_w8_s8x8`, `_b16`)."""
# pair_tiles_w8_s8x8(out, x, w, bias, multiplier, shift, zero_point, x_row_stride, rows, row_len, x_pixel_stride,
# out_pixel_stride, w_channel_stride, channels): Helium's shared pair tiles' call (int8 weights, channel c's window
# from w + c * w_channel_stride).
for _bias, _op in PAIR_TILES_W8_OPS.items():
    register_helper_call(_op, RISCV_HELPERS,
                         functools.partial(pair_tiles_helper_name, bias=_bias, int8_weights=True),
                         HELIUM_PAIR_TILES_ACCESS)


# the window of a two-pixel int8 window MAC call (`<prefix>_mac_s8x2x8_row`, `<prefix>_mac_s8x2x8`)
_int8_pair_window = functools.partial(channel_strided_window, tile=MAC_CHANNELS)

RISCV_PAIR_TILES_W8 = PairTileHelpers(
    (MAC_2PX_ROW_OP, MAC_2PX_OP), _int8_pair_window, MAC_CHANNELS, None,
    {REQUANTIZE_OPS_BY_BIAS[bias]: op for bias, op in PAIR_TILES_W8_OPS.items()}, None,
    functools.partial(channel_strided_args, tile=MAC_CHANNELS))
"""The RV32 cores' fused pixel pairs over int8 weights as stored (the pairs whose weights are not paired: a
FULLY_CONNECTED over several rows): the two-pixel int8 window MAC's calls over eight channels a tile and each pixel's
"double_small" epilogue call as one call of the out-of-line `<prefix>_pair_tiles_w8_s8x8`, where each kernel held an
inlined copy of that MAC with its constant strides and the tiles' loop; only in a kernel whose MACs pay it
(`int8_pairs_pay`). rv32imc vit5h_d40_24 (four of its five 36x40 -> 40 layers): code 10,392 -> 8,252 B with the
MEAN's scalar loops (`backends.riscv.schedules.SUM_TILE_MIN_STEPS`), 3,481,084 -> 3,482,867 instructions, weights
unchanged."""

W8_EXTRA_PER_MAC = 0.8
"""The instructions a MAC of the fused int8 pairs adds to the inlined MAC's where the helper's strides are in
registers, not immediates (rv32imc vit5h_d40_24's 36x40 -> 40 FULLY_CONNECTED layers, 57,600 MACs, through a copy
gcc did not specialize: 202,963 -> 247,576 instructions, 3.5 -> 4.3 a MAC; where every call passes the same sizes gcc
folds them into the copy, 202,963 -> 203,643)."""
W8_SAVED_BYTES = 560
"""The code a kernel's fused int8 pairs save (the same layers: 660 -> ~90 B each, the helper's one copy apart)."""


def int8_pairs_pay(func: tirx.PrimFunc) -> bool:
    """Whether ``func``'s two-pixel int8 window MAC calls (`<prefix>_mac_s8x2x8_row`, `_mac_s8x2x8`) run few enough
    MACs per call of the kernel that their fused pairs' extra instructions (W8_EXTRA_PER_MAC) cost less than the code
    they save (W8_SAVED_BYTES) at the one price of code: vit5h_d40_24's 36x40 -> 40 layers (57,600 MACs) yes, its
    36x76 -> 40 one (109,440) no."""
    macs = 0
    for call, times in op_executions(func.body, {MAC_2PX_ROW_OP, MAC_2PX_OP}):
        window = _int8_pair_window(call)
        if window is None:
            return False
        macs += times * MAC_PIXELS * MAC_CHANNELS * window.rows * window.row_len
    return 0 < macs * W8_EXTRA_PER_MAC < W8_SAVED_BYTES * INSTRUCTIONS_PER_BYTE

PAIR_TILES_TILED_OPS = by_bias("tvm_ext.riscv_pair_tiles_tiled_s8x8")
"""The fused pixel pairs' form for tiled rows per bias type (`<prefix>_pair_tiles_tiled_s8x8`, `_b16`)."""
# pair_tiles_tiled_s8x8(out, x, w, bias, multiplier, shift, zero_point, row_len, x_pixel_stride, out_pixel_stride,
# unrolled, tiles, channels): out[p * out_pixel_stride + c] and the epilogue's constants for c < channels;
# x[p * x_pixel_stride + k]; w one run of 8 * tiles * row_len bytes (the index 8 (t * row_len + k) + c as eight copies
# of t * row_len + k).
_TILED_CHANNELS = (Axis(Arg(12), 1),)
PAIR_TILES_TILED_ACCESS = HelperAccess((
    PointerAccess(0, (Axis(MAC_PIXELS, Arg(9)), *_TILED_CHANNELS)),
    PointerAccess(1, (Axis(MAC_PIXELS, Arg(8)), Axis(Arg(7), 1))),
    PointerAccess(2, (Axis(Arg(11), Arg(7)), Axis(Arg(7), 1)) * MAC_CHANNELS + (Axis(MAC_CHANNELS, 1),)),
    *(PointerAccess(pointer, _TILED_CHANNELS) for pointer in (3, 4, 5)),
))
PAIR_TILES_TILED_PART_OPS = by_bias("tvm_ext.riscv_pair_tiles_tiled_part_s8x8")
"""Its form for a last tile storing fewer channels (`<prefix>_pair_tiles_tiled_part_s8x8`, `_b16`: the call's
channels fewer than its tiles')."""
for _ops, _part in ((PAIR_TILES_TILED_OPS, False), (PAIR_TILES_TILED_PART_OPS, True)):
    for _bias, _op in _ops.items():
        register_helper_call(_op, RISCV_HELPERS,
                             functools.partial(pair_tiles_helper_name, bias=_bias, tiled=True, part=_part),
                             PAIR_TILES_TILED_ACCESS)


def _tiled_window(call) -> Optional[PairWindow]:
    """The window of a two-pixel tiled MAC call (`<prefix>_mac_s8x2x8_tiled`: acc_a, acc_b, x, w, row_len,
    x_pixel_stride) of constant sizes, its tile's bytes eight per input, else None."""
    sizes = [int(arg) if isinstance(arg, tirx.IntImm) else None for arg in call.args[4:]]
    if None in sizes:
        return None
    row_len, x_pixel_stride = sizes
    return PairWindow(*call.args[:4], 0, 1, row_len, x_pixel_stride, MAC_CHANNELS * row_len)


def tiled_pair_tiles(unrolled: bool) -> PairTileHelpers:
    """The RV32 cores' fused pixel pairs over tiled rows (`tvm_ext.kernels.dense.tile_rows`: a FULLY_CONNECTED of
    several rows, `tiled_mac_replacement`): the two-pixel tiled MAC's calls and each pixel's "double_small" epilogue
    call over a pair's tiles as one call of the out-of-line `<prefix>_pair_tiles_tiled_s8x8`, whose loop runs the
    inlined MAC's instructions (no channel stride), where each kernel held its own inlined MAC; a layer's channels
    padded to whole tiles, its last tile's stores counted (the epilogue's count, `requantize_epilogue.stored_channels`)
    by the call's last argument (its `_part` form). ``unrolled``: the MAC loop's form every call passes (the bundle's
    choice, `tiled_unrolled_pays`)."""
    return PairTileHelpers(
        (MAC_TILED_2PX_OP,), _tiled_window, MAC_CHANNELS, None,
        {REQUANTIZE_OPS_BY_BIAS[bias]: op for bias, op in PAIR_TILES_TILED_OPS.items()}, None,
        lambda window, out_pixel_stride, tiles: [window.row_len, window.x_pixel_stride, out_pixel_stride,
                                                 int(unrolled), tiles, MAC_CHANNELS * tiles],
        (RISCV_EPILOGUE, {PAIR_TILES_TILED_OPS[bias]: op for bias, op in PAIR_TILES_TILED_PART_OPS.items()}))


TILED_UNROLLED_BYTES = 300
"""The code the tiled pair helper's MAC loop unrolled twice adds to its one copy, bytes (rv32imc
vit2h_d30_b1_24x16_tanh_int8: `pair_tiles_tiled_any` 438 -> 740 B)."""
TILED_UNROLLED_SAVED_PER_MAC = 0.077
"""The instructions the unrolled loop saves per MAC of the tiled pairs (rv32imc vit2h_d30_b1_24x16_tanh_int8, its
six layers' 164,160 MACs: 1,633,313 -> 1,620,713 instructions; vit_tiny_16_int8's 64x48 -> 48 layers 0.08)."""


def tiled_unrolled_pays(macs: int) -> bool:
    """Whether the tiled pair helper's unrolled MAC loop pays for its bytes (TILED_UNROLLED_BYTES) in the bundle
    whose tiled pairs run ``macs`` MACs per inference (TILED_UNROLLED_SAVED_PER_MAC each) at the one price of code:
    vit_tiny_16_int8's 1.2 M yes, vit2h_d30_b1_24x16's 0.16 M no."""
    return macs * TILED_UNROLLED_SAVED_PER_MAC >= TILED_UNROLLED_BYTES * INSTRUCTIONS_PER_BYTE


def tiled_pair_macs(func: tirx.PrimFunc) -> int:
    """The MACs of ``func``'s calls of the tiled pair helper per call of ``func``."""
    ops = set(PAIR_TILES_TILED_OPS.values()) | set(PAIR_TILES_TILED_PART_OPS.values())
    return sum(times * MAC_PIXELS * MAC_CHANNELS * int(call.args[11]) * int(call.args[7])
               for call, times in op_executions(func.body, ops))


RISCV_PAIR_TILES_ODD = PairTileHelpers(
    RISCV_PAIR_TILES.mac_ops, functools.partial(_paired_window, odd=True), MAC_CHANNELS, None,
    {**{REQUANTIZE_OPS_BY_BIAS[bias]: op for bias, op in PAIR_TILES_ODD_OPS.items()},
     **{REQUANTIZE_DOUBLE_OPS_BY_BIAS[bias]: op for bias, op in PAIR_TILES_DOUBLE_ODD_OPS.items()},
     **{REQUANTIZE_LUT_OPS_BY_BIAS[bias]: op for bias, op in PAIR_TILES_LUT_ODD_OPS.items()}}, None,
    RISCV_PAIR_TILES.window_args)
"""RISCV_PAIR_TILES for windows of odd rows (1x1 convolutions over odd input channels), through the one more
out-of-line copy of the `_odd` forms, where each such kernel held its own inlined copy of the two-pixel paired MAC's
window loops and its tiles' loop (~750 B a kernel): rv32imc densenet_bc_g10_32 (four 1x1 convolutions over 37 and
47 channels) 14,650 -> 12,426 B of code, 112,060,539 -> 112,205,977 instructions."""

CONV_TILES_OPS = by_bias("tvm_ext.riscv_conv_tiles_s8x8")
"""The fused one-pixel channel tiles helper per bias type (`<prefix>_conv_tiles_s8x8`, `_b16`)."""
# conv_tiles_s8x8(out, x, w, bias, multiplier, shift, zero_point, x_row_stride, rows, row_len, w_tile_stride,
# tiles): out and the epilogue's constants 8 * tiles elements; x[r * x_row_stride + k]; w tiles runs of a window's
# words, w_tile_stride apart.
_TILE_CHANNELS = (Axis(Arg(11), MAC_CHANNELS), Axis(MAC_CHANNELS, 1))
CONV_TILES_ACCESS = HelperAccess((
    PointerAccess(0, _TILE_CHANNELS),
    PointerAccess(1, (Axis(Arg(8), Arg(7)), Axis(Arg(9), 1))),
    PointerAccess(2, (Axis(Arg(11), Arg(10)), *_window_words(Arg(8), Arg(9)))),
    *(PointerAccess(pointer, _TILE_CHANNELS) for pointer in (3, 4, 5)),
))
for _bias, _op in CONV_TILES_OPS.items():
    register_helper_call(_op, RISCV_HELPERS, functools.partial(conv_tiles_helper_name, bias=_bias),
                         CONV_TILES_ACCESS)


def _paired_tile_window(call) -> Optional[TileWindow]:
    """The window of a one-pixel paired MAC call (`<prefix>_mac_s8x8_pairs`: acc, x, w, row_len; `_rows`: acc, x,
    w, x_row_stride, rows, row_len) of constant sizes, its tile's words one window's, else None."""
    sizes = [int(arg) if isinstance(arg, tirx.IntImm) else None for arg in call.args[3:]]
    if None in sizes:
        return None
    x_row_stride, rows, row_len = sizes if len(sizes) == 3 else (0, 1, *sizes)
    return TileWindow(*call.args[:3], x_row_stride, rows, row_len, PAIR_WORDS * rows * row_len)


RISCV_CONV_TILES = ConvTileHelpers(
    REQUANTIZE_OPS_BY_BIAS, CONV_TILES_OPS, (MAC_PAIRS_OP, MAC_PAIRS_ROWS_OP), _paired_tile_window, MAC_CHANNELS,
    lambda window, tiles: [window.x_row_stride, window.rows, window.row_len, window.w_tile_step, tiles])
"""The RV32 cores' fused one-pixel tiles (`backends.cortex_m.schedules.conv_tiles`): a lone or border pixel's
paired MAC (one run or a KxK window's rows), eight channels a tile, the "double_small" epilogue's calls."""

CONV_TILES_LUT_OPS = by_bias("tvm_ext.riscv_conv_tiles_lut_s8x8")
"""The fused one-pixel tiles with a lookup table after the requantization per bias type
(`<prefix>_conv_tiles_lut_s8x8`, `_b16`: CONV_TILES_ACCESS's call, then the table)."""
for _bias, _op in CONV_TILES_LUT_OPS.items():
    register_helper_call(_op, RISCV_HELPERS, functools.partial(conv_tiles_helper_name, bias=_bias, table=True),
                         HelperAccess((*CONV_TILES_ACCESS.pointers, PointerAccess(12, (Axis(LUT_ENTRIES, 1),)))))


def one_tile_calls(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """``func`` (a scheduled kernel after its epilogue calls) with each one-pixel tile that runs once per call (no
    loop around it: a one-row FULLY_CONNECTED of exactly MAC_CHANNELS units, whose tile has no loop to fuse) --
    its accumulators zeroed, one paired MAC call and one "double_small" epilogue call on them -- as one call of the
    fused one-pixel tiles over one tile (RISCV_CONV_TILES' op, tiles 1). Once per inference: the instructions are
    the call's and its loop's few (rv32imc ae_512_52_int8, its 52 -> 8 layer beside a 52 -> 512 one that calls the
    fused tiles already: code 1,624 -> 1,316 B, the paired MAC's out-of-line copy gone, 279,001 -> 278,993
    instructions; no shared model's bundle has such a kernel). Not priced per bundle: in one whose other kernels
    neither call the fused tiles nor leave the paired MAC's copy unused, the call brings the fused tiles' copy in
    (~300 B). Any other function unchanged."""
    realize = func.body
    if not isinstance(realize, s_tir.SBlockRealize):
        return func
    root = realize.block
    body = _one_tiles_replaced(root.body, ())
    if body.same_as(root.body):
        return func
    block = s_tir.SBlock(root.iter_vars, root.reads, root.writes, root.name_hint, body, root.init,
                         root.alloc_buffers, root.match_buffers, root.annotations)
    return func.with_body(s_tir.SBlockRealize(realize.iter_values, realize.predicate, block))


def _one_tiles_replaced(stmt: tirx.Stmt, loops: tuple) -> tirx.Stmt:
    """``stmt`` (inside ``loops``, each of one iteration) with each one-pixel tile outside any loop of more
    iterations or block (``one_tile_calls``) as its fused call."""
    if isinstance(stmt, tirx.For) and isinstance(stmt.extent, tirx.IntImm) and int(stmt.extent) == 1:
        return map_child_stmts(stmt, lambda child: _one_tiles_replaced(child, (*loops, stmt)))
    if isinstance(stmt, (tirx.For, s_tir.SBlockRealize, s_tir.SBlock)) or not isinstance(stmt, tirx.Stmt):
        return stmt
    if not isinstance(stmt, tirx.SeqStmt):
        return map_child_stmts(stmt, lambda child: _one_tiles_replaced(child, loops))
    stmts = [_one_tiles_replaced(child, loops) for child in stmt.seq]
    for at in range(len(stmts) - 1):
        fused = _one_tile_call(stmts, at, LoopOffsets(loops))
        if fused is not None:
            first, call = fused
            stmts[first:at + 2] = [call]
            return _one_tiles_replaced(tirx.SeqStmt(stmts), loops) if len(stmts) > 1 else call
    return tirx.SeqStmt(stmts) if any(not a.same_as(b) for a, b in zip(stmts, stmt.seq)) else stmt


def _one_tile_call(stmts: list, at: int, offsets: LoopOffsets) -> Optional[tuple[int, s_tir.SBlockRealize]]:
    """(the index of its first zeroing statement, the fused call) of the tile whose paired MAC call is ``stmts[at]``
    and epilogue call ``stmts[at + 1]``, the statements right before them zeroing exactly the MAC's MAC_CHANNELS
    accumulators, which the epilogue reads (``offsets``: over the loops around them); else None."""
    mac = call_of(stmts[at], RISCV_CONV_TILES.mac_ops)
    epilogue = call_of(stmts[at + 1], tuple(REQUANTIZE_OPS_BY_BIAS.values()))
    window = None if mac is None or epilogue is None else _paired_tile_window(mac)
    if window is None or stored_channels(epilogue) != MAC_CHANNELS:
        return None
    acc, x, w, out, read, *constants = (pointee(arg) for arg in (window.acc, window.x, window.w, *epilogue.args[:5]))
    if None in (acc, x, w, out, read, *constants):
        return None
    first, zeroed = at, []
    while first > 0 and (stores := zeroed_stores(stmts[first - 1], acc.source)) is not None:
        first, zeroed = first - 1, stores + zeroed
    if not offsets.zeroes_and_reads(zeroed, acc, read, MAC_CHANNELS):
        return None
    bias = next(bias for bias, op in REQUANTIZE_OPS_BY_BIAS.items() if op == epilogue.op.name)
    call = tirx.call_intrin("int32", CONV_TILES_OPS[bias], epilogue.args[0], window.x, window.w, *epilogue.args[2:6],
                            *RISCV_CONV_TILES.window_args(window, 1))
    written = tirx.BufferRegion(out.source, [*(Range.from_min_extent(i, 1) for i in out.indices[:-1]),
                                             Range.from_min_extent(out.indices[-1], MAC_CHANNELS)])
    reads = [whole_region(load.source) for load in (x, w, *constants)]
    return first, s_tir.SBlockRealize([], True, s_tir.SBlock([], reads, [written], "conv_tiles", tirx.Evaluate(call)))


RISCV_CONV_TILES_LUT = replace(RISCV_CONV_TILES, requantize=REQUANTIZE_LUT_OPS_BY_BIAS, tiles=CONV_TILES_LUT_OPS)
"""RISCV_CONV_TILES over the table epilogue's calls (`<prefix>_requantize_small_lut_s8`): a LEAKY_RELU
convolution's lone and border pixels, whose tile loops each kernel had kept inlined beside its pairs' fused calls."""

CONV_TILES4_OPS = by_bias("tvm_ext.riscv_conv_tiles_s8x4")
"""The fused one-pixel four-channel tiles helper per bias type (`<prefix>_conv_tiles_s8x4`, `_b16`: the DSP cores'
fused tiles' call, `backends.cortex_m.schedules.conv_tiles.CONV_TILES_ACCESS`)."""
for _bias, _op in CONV_TILES4_OPS.items():
    register_helper_call(_op, RISCV_HELPERS, functools.partial(conv_tiles4_helper_name, bias=_bias),
                         DSP_TILES_ACCESS)
RISCV_CONV_TILES4 = ConvTileHelpers(REQUANTIZE_OPS_BY_BIAS, CONV_TILES4_OPS, (MAC4_OP,), tile=FOUR_CHANNELS)
"""The RV32 cores' fused four-channel tiles: a pixel's four-channel window MAC calls (`<prefix>_mac_s8x4`, the dual
MAC's call) and "double_small" epilogues over its tiles as one call (yolo_tiny_64_odd, densenet_bc_32,
resnet8_w20_32: every kernel of the four-channel tile)."""

MIN_REDUCTION = 8
"""The shortest window (MACs per output) the helper takes. With the one-row helper's sixteen sums in registers and
the out-of-line requantization, the helper pays on short windows too (rv32imc, measured against 32:
pretrainedResnet_quant 42,067,854 -> 41,888,475 and vww_96_int8 30,460,767 -> 30,203,751 instructions, their first
3x3 convolutions on three channels, 27 MACs; ad01_int8 897,218 -> 896,916, its layer of 8 inputs); no shared model
has a shorter one (1 measured the same)."""


def mac_replacement(realize: s_tir.SBlockRealize, loops: list,
                    outlined_depthwise: bool = False) -> Optional[s_tir.SBlockRealize]:
    """A helper's call block computing what the For nodes `loops` (the reduction loops, then optionally a
    loop of two output pixels, then the unit-stride loop of MAC_CHANNELS output channels, innermost) around
    `realize` compute: the paired MAC's (a FULLY_CONNECTED kernel's paired weights), else the window MAC's, else
    the depthwise MAC's, else the depthwise padding's; None where none computes exactly that. `outlined_depthwise`
    (a padded border's clipped window) changes nothing: the depthwise helper is out of line for every window."""
    return (paired_mac_replacement(realize, loops) or tiled_mac_replacement(realize, loops)
            or window_mac_replacement(realize, loops) or int16_window_replacement(realize, loops)
            or depthwise_mac_replacement(realize, loops)
            or padding_replacement(realize, loops, DEPTHWISE_PAD_OP, MAC_CHANNELS)
            or whole_tile_replacement(realize, loops))


def paired_mac_replacement(realize: s_tir.SBlockRealize, loops: list) -> Optional[s_tir.SBlockRealize]:
    """The paired MAC's call block (`<prefix>_mac_s8x8_pairs`, or `<prefix>_mac_s8x2x8_pairs` for two pixels, their
    `_rows` forms for a window of rows apart) for ``loops`` (the reduction loops, then optionally a loop of two
    output pixels, then the unit-stride loop of MAC_CHANNELS output channels) around ``realize``: a FULLY_CONNECTED
    or CONV_2D update ``acc[.., o] += int32(x[.., k]) * w(o, k)`` over int8 x and
    `tvm_ext.kernels.dense.paired_weight`'s decoding of int32 words, each channel tile's words [4k + p] from one
    origin over the whole window (k its flat index), o even for the tile's first channel, the inputs one run or
    (the first loop stepping) rows of one run a constant stride apart, the second pixel's a constant stride after,
    the weights shared by both pixels; None for any other update or access."""
    update = int8_data_update(realize, loops, MAC_CHANNELS)
    if update is None or not isinstance(update[2], tirx.Select):
        return None
    store, data, select = update
    word = _paired_word(select)
    if word is None:
        return None
    return _tile_mac_replacement(realize, loops, MacReduction(store, data, word), PAIR_WORDS, select.condition.a.a,
                                 (MAC_PAIRS_OP, MAC_PAIRS_ROWS_OP, MAC_PAIRS_2PX_OP, MAC_PAIRS_2PX_ROWS_OP))


def tiled_mac_replacement(realize: s_tir.SBlockRealize, loops: list) -> Optional[s_tir.SBlockRealize]:
    """The tiled MAC's call block (`<prefix>_mac_s8x8_tiled`, or `<prefix>_mac_s8x2x8_tiled` for two pixels) for
    ``loops`` around ``realize`` as `paired_mac_replacement`'s, over `tvm_ext.kernels.dense.tile_rows`' int8 weights:
    each channel tile's bytes [8k + c] from one origin over the window's one run of inputs (a FULLY_CONNECTED's
    row); over a CONV_2D's tiled OHWI weights ([O / 8, KH, KW, I, 8]: `tvm_ext.kernels.conv.conv2d_int8`), every
    window (rows apart, or one run: a border pixel's copied window) as a call of the forms over window rows
    (`<prefix>_mac_s8x8_tiled_rows`, `<prefix>_mac_s8x2x8_tiled_rows`: one out-of-line copy each); None for any other
    update or access."""
    update = int8_data_update(realize, loops, MAC_CHANNELS)
    if update is None:
        return None
    store, data, factor = update
    weight = _load_of(factor, ("int8",))
    if weight is None:
        return None
    if len(accessed_buffer(weight).shape) == CONV_TILED_RANK:
        ops = (MAC_TILED_ROWS_OP, MAC_TILED_ROWS_OP, MAC_TILED_2PX_ROWS_OP, MAC_TILED_2PX_ROWS_OP)
        return _tile_mac_replacement(realize, loops, MacReduction(store, data, weight), MAC_CHANNELS, None, ops,
                                     window_rows=True)
    return _tile_mac_replacement(realize, loops, MacReduction(store, data, weight), MAC_CHANNELS, None,
                                 (MAC_TILED_OP, None, MAC_TILED_2PX_OP, None))


CONV_TILED_RANK = 5
"""The rank of a CONV_2D's tiled weights ([O / 8, KH, KW, I, 8]; a FULLY_CONNECTED's are [O / 8, K, 8])."""


def _tile_mac_replacement(realize: s_tir.SBlockRealize, loops: list, reduction: MacReduction, step: int,
                          channel: Optional[tirx.PrimExpr], ops: tuple,
                          window_rows: bool = False) -> Optional[s_tir.SBlockRealize]:
    """The call block of a MAC over weights laid out per tile of MAC_CHANNELS channels, input after input (``step``
    weight elements per input, channel c's at c * step // MAC_CHANNELS: paired words, 4, or tiled bytes, 8) for
    ``loops`` around ``realize`` of the update ``reduction``; ``channel`` (paired words: the output channel, even at
    the tile's first) or None; ``ops`` the helpers' (one pixel, one pixel over rows, two pixels, two pixels over
    rows; None: that form not taken); with ``window_rows``, a window of one run passed as one row of the forms over
    rows; None where the access is not exactly that."""
    store = reduction.store
    bindings = {iv.var: v for iv, v in zip(realize.block.iter_vars, realize.iter_values)}
    inner = [loop.loop_var for loop in loops]
    offsets = AccessOffsets(bindings, inner)
    origin = offsets.origin
    try:
        pixels = len(loops) > 2 and offsets.step(store, len(loops) - 2) != 0
        reduce_axes = range(len(loops) - (2 if pixels else 1))
        if not reduce_axes or (pixels and int(loops[-2].extent) != MAC_PIXELS):
            return None
        runs = [1] * len(reduce_axes)  # each reduction loop's step along the window's one run of inputs
        for axis in reversed(reduce_axes[:-1]):
            runs[axis] = runs[axis + 1] * int(loops[axis + 1].extent)
        # The first reduction loop of more than one iteration (after loops of one: a 1xK kernel dilated along its
        # columns) may step the window's rows (x_row_stride apart) when the later ones make one run.
        row_axis = next((axis for axis in reduce_axes[:-1] if int(loops[axis].extent) > 1), 0)
        rows, row_len, x_row_stride = 1, runs[0] * int(loops[0].extent), 0
        if len(reduce_axes) > 1 and int(loops[row_axis].extent) > 1 \
                and offsets.step(reduction.data, row_axis) != runs[row_axis]:
            rows, row_len = int(loops[row_axis].extent), runs[row_axis]
            x_row_stride = offsets.step(reduction.data, row_axis)
        x_pixel_stride = offsets.step(reduction.data, len(loops) - 2) if pixels else 0
        acc_pixel_stride = offsets.step(store, len(loops) - 2) if pixels else 0
        if pixels and acc_pixel_stride < MAC_CHANNELS:
            return None  # the pixels keep their accumulators apart
        first = offsets.value(channel, origin) if channel is not None else 0
        base_w, base_x, base_acc = (offsets.offset(a, origin) for a in (reduction.weight, reduction.data, store))
        # Each reduction loop at its first, second and last value (the others at 0), and all at their last.
        corners = [list(origin), [int(loop.extent) - 1 for loop in loops]]
        for axis in reduce_axes:
            for value in {min(1, int(loops[axis].extent) - 1), int(loops[axis].extent) - 1} - {0}:
                corner = list(origin)
                corner[axis] = value
                corners.append(corner)
        for corner in corners:
            k = sum(corner[axis] * runs[axis] for axis in reduce_axes)
            for p in range(MAC_PIXELS if pixels else 1):
                for c in range(MAC_CHANNELS):
                    point = list(corner)
                    point[-1] = c
                    if pixels:
                        point[-2] = p
                    if ((channel is not None and offsets.value(channel, point) != first + c)
                            or offsets.offset(reduction.weight, point) != base_w + step * k + c * step // MAC_CHANNELS
                            or offsets.offset(reduction.data, point) != base_x + k + p * x_pixel_stride
                            + (corner[row_axis] * (x_row_stride - row_len) if rows > 1 else 0)
                            or offsets.offset(store, point) != base_acc + c + p * acc_pixel_stride):
                        return None
    except KeyError:
        return None
    if channel is None and rows * row_len < MIN_REDUCTION:
        return None
    if first % 2 or any(offsets.step(reduction.weight, axis) != step * runs[axis] for axis in reduce_axes
                        if int(loops[axis].extent) > 1):
        return None
    one, one_rows, two, two_rows = ops
    op = (two_rows if rows > 1 else two) if pixels else (one_rows if rows > 1 else one)
    if op is None:
        return None
    if window_rows and rows == 1:
        x_row_stride = row_len
    window = [x_row_stride, rows, row_len] if rows > 1 or window_rows else [row_len]
    if not pixels:
        return helper_call_block(op, reduction, bindings, inner, window, channel_tile(reduction, MAC_CHANNELS))
    corner = list(origin)
    corner[-2:] = [MAC_PIXELS - 1, MAC_CHANNELS - 1]
    tile = [last - first_index + 1 for last, first_index in zip(offsets.index(store, corner),
                                                                  offsets.index(store, origin))]
    return helper_call_block(op, reduction, bindings, inner, [*window, x_pixel_stride], tile,
                             second_pixel=len(inner) - 2)


def paired_or_int8_reduction(block: s_tir.SBlock) -> Optional[MacReduction]:
    """The block's int8 MAC reduction (`dual_mac.mac_reduction`), or its update over paired weight words
    ``acc = acc + int32(x) * paired_weight(word)`` as (store, x, word), or None for any other body: what
    `backends.cortex_m.schedules.flat_pixels.flatten_odd_pixel_rows` reads of a kernel the RISC-V MAC helpers take."""
    return mac_reduction(block) or accumulation(
        block, "int32", lambda factor: _load_of(factor, ("int8",)),
        lambda factor: _paired_word(factor) if isinstance(factor, tirx.Select) else None)


def _paired_word(select: tirx.Select) -> Optional[TensorLoad]:
    """The int32 word load of `tvm_ext.kernels.dense.paired_weight`'s ``Select(o % 2 == 0, a, (word - a) >> 16)``
    with ``a = int32(int16(word))``, or None where ``select`` is not exactly that."""
    low = select.true_value
    if not (isinstance(low, tirx.Cast) and str(low.ty.dtype) == "int32" and isinstance(low.value, tirx.Cast)
            and str(low.value.ty.dtype) == "int16" and isinstance(low.value.value, TensorLoad)):
        return None
    word = low.value.value
    if str(word.source.dtype) != "int32":
        return None
    condition = select.condition
    if not (isinstance(condition, tirx.EQ) and isinstance(condition.a, tirx.FloorMod)
            and isinstance(condition.a.b, tirx.IntImm) and int(condition.a.b) == 2
            and isinstance(condition.b, tirx.IntImm) and int(condition.b) == 0):
        return None
    high = (word - low) >> 16  # as paired_weight builds it
    return word if tvm_ffi.structural_equal(select.false_value, high) else None


def window_mac_replacement(realize: s_tir.SBlockRealize, loops: list) -> Optional[s_tir.SBlockRealize]:
    """The window MAC's call block (one or two pixels) for `loops` around `realize`, or None where it does not
    fit (see the module docstring); a four-channel tile's, one pixel, the four-channel window MAC's
    (`<prefix>_mac_s8x4`)."""
    channels = FOUR_CHANNELS if loops and int(loops[-1].extent) == FOUR_CHANNELS else MAC_CHANNELS
    window = mac_window(realize, loops, ("int8",), channels)
    if window is None or window.geometry.rows * window.geometry.row_len < MIN_REDUCTION:
        return None
    if channels == FOUR_CHANNELS:
        if not _over_pixels(window):
            return None
        return window_call_block(MAC4_OP, None, window.reduction, window.bindings, window.inner, window.geometry,
                                 channels)
    two_pixels = MAC_2PX_ROW_OP if window.geometry.rows == 1 else MAC_2PX_OP
    return window_call_block(MAC_OP, two_pixels, window.reduction, window.bindings, window.inner, window.geometry,
                             MAC_CHANNELS)


def int16_window_replacement(realize: s_tir.SBlockRealize, loops: list) -> Optional[s_tir.SBlockRealize]:
    """The int16 dual MAC's call block (`<prefix>_dual_mac_s16x4_outlined`, RISCV_TILES_16X8's: the one out-of-line
    copy of Cortex-M's `<prefix>_dual_mac_s16x4`, its portable C) for `loops` around
    `realize`: a 16x8 CONV_2D's or FULLY_CONNECTED's tile of FOUR_CHANNELS (int16 inputs, int8 weights), one pixel; None
    for any other. Its tile loops then become calls of the fused 16x8 tiles' out-of-line copy
    (`backends.cortex_m.schedules.tiles_16x8`), where each kernel had unrolled TVM's loops over the tile's four
    accumulators in every region of its window."""
    if not loops or int(loops[-1].extent) != FOUR_CHANNELS:
        return None
    window = mac_window(realize, loops, ("int16",), FOUR_CHANNELS)
    if window is None or window.geometry.x_pixel_stride is not None:
        return None
    return window_call_block(RISCV_TILES_16X8.mac, None, window.reduction, window.bindings, window.inner,
                             window.geometry, FOUR_CHANNELS)


def extern_mac_calls(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """``func`` (one TE extern stage: a root block around its statements, e.g. an LSTM's gates) with each perfect
    loop nest around an int8 MAC block in the four-channel window MAC's form (the reduction loops, then the
    unit-stride loop of FOUR_CHANNELS accumulators innermost, at least MIN_REDUCTION products) replaced by a call of
    the bundle's out-of-line `<prefix>_mac_s8x4`; any other function unchanged. Where TVM's loop nests stayed,
    each of an LSTM's eight gate products held its own copy of them: rv32imc kws_lstm48_49x10 2,692 -> 2,562 B of
    code, 6,461,889 -> 3,594,415 instructions per inference."""
    return with_root_loops_replaced(func, _extern_mac_call)


def interleaved_mac_calls(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """``func`` (one TE extern stage) with each loop nest of an int8 MAC over interleaved weights (an LSTM gate's
    or an SVDF's feature product, every tile of four units:
    ``backends.cortex_m.schedules.interleaved_mac.interleaved_mac_call``, the DSP cores' matcher too) replaced by a
    call of the bundle's out-of-line `<prefix>_dual_mac_s8x4_interleaved` (INTERLEAVED_MAC_OP; RV32 keeps the gate
    weights int8: no int16 form), then the four-channel window MAC's nests by its calls (`extern_mac_calls`); any
    other function unchanged."""
    return extern_mac_calls(with_root_loops_replaced(
        func, lambda loop: interleaved_mac_call(loop, {"int8": INTERLEAVED_MAC_OP})))


def _extern_mac_call(loop: tirx.For) -> Optional[s_tir.SBlockRealize]:
    """The four-channel window MAC's call computing the perfect loop nest ``loop`` around an int8 MAC block of
    FOUR_CHANNELS accumulators innermost, else None."""
    loops = [loop]
    while isinstance(loops[-1].body, tirx.For):
        loops.append(loops[-1].body)
    realize = loops[-1].body
    if not isinstance(realize, s_tir.SBlockRealize):
        return None
    window = mac_window(realize, loops, ("int8",), FOUR_CHANNELS)
    if window is None or window.geometry.x_pixel_stride is not None \
            or window.geometry.rows * window.geometry.row_len < MIN_REDUCTION:
        return None
    return window_call_block(MAC4_OP, None, window.reduction, window.bindings, window.inner, window.geometry,
                             FOUR_CHANNELS)


def _over_pixels(window) -> bool:
    """Whether the window's sums move with a loop outside it along an axis of more than one element of their
    accumulators (the kernel's pixels or rows, not its channel tiles): the four-channel window MAC's kernels, whose
    border regions and pixels share its out-of-line copy; a one-row layer's one loop of four sums
    (micro_speech_quantized's 4-unit FULLY_CONNECTED on rv32imc) is smaller inlined than the helper it would bring
    into the bundle (1,494 B, against 1,576 B with it)."""
    store = window.reduction.store
    inner = set(window.inner)
    for extent, index in list(zip(accessed_buffer(store).shape, store.indices))[:-1]:
        if isinstance(extent, tirx.IntImm) and int(extent) == 1:
            continue
        try:
            value = substitute_index(index, window.bindings)
        except KeyError:
            return True
        if any(var not in inner for var in tirx.analysis.undefined_vars(value)):
            return True
    return False


def depthwise_mac_replacement(realize: s_tir.SBlockRealize, loops: list) -> Optional[s_tir.SBlockRealize]:
    """The depthwise MAC's call block for `loops` (up to two window loops, then the channel loop of MAC_CHANNELS)
    around an int8 `realize`, or None where the loads do not fit it (`backends.cortex_m.schedules.depthwise_mac`:
    every tap reads eight consecutive channels, constant strides)."""
    reduction = mac_reduction(realize.block, ("int8",))
    if reduction is None:
        return None
    return depthwise_call_block(DEPTHWISE_MAC_OP, realize, loops, reduction, MAC_CHANNELS)


WHOLE_TILE_MIN_PIXELS = 9
"""The fewest output pixels of a depthwise layer held in one tile (`depthwise_whole_tile`): below a 3x3 window's taps
most or all of its pixels are border cases, whose loops the fused helpers may not take (Helium's rule:
`backends.cortex_m.schedules.helium_depthwise.WHOLE_TILE_MIN_PIXELS`)."""


def depthwise_whole_tile(sch: s_tir.Schedule, block) -> Optional[int]:
    """The channel count of an int8 depthwise reduction ``block`` of depth multiplier 1 (its input and weight loads
    both int8 and indexed by the output's channel last) whose channels eight does not divide, more than eight, over
    at least WHOLE_TILE_MIN_PIXELS output pixels, else None: such a layer takes one tile of every channel, its
    window calls the depthwise helper of any count (DEPTHWISE_MAC_N_OP) and its pixels the fused tiles whose
    second tile of eight is moved back so that the last ends at the last channel (`RISCV_DEPTHWISE_WHOLE_TILES`).
    With the tiles of eight and four only, such layers kept TVM's scalar loop nest (rv32imc, 11.6-14.6 instructions
    per MAC) or its four sums (9.0-9.5). Measured on rv32imc (instructions, code B), before / after:
    mobilenet_v1_030_80 38,051,607, 15,206 / 36,859,816, 9,876 (its 38-channel 3x3 layer 13.9 -> 9.0 a MAC, its
    9-channel one 14.6 -> 15.2: two tiles of eight for nine channels); ds_cnn_w30_49x10 4,622,649, 4,644 /
    4,111,924, 4,550; ds_cnn_w44_49x10 (four-channel tiles before) 7,578,952, 3,910 / 7,651,768, 2,836."""
    node = sch.get(block)
    loads = [load for load in walk(node.body.value) if isinstance(load, TensorLoad)
             and not load.source.same_as(node.body.buffer)] if isinstance(node.body, tirx.BufferStore) else []
    if not depthwise_channel_tiles(sch, block) or len(loads) != 2:  # not one load: a window's sums (a pool)
        return None
    extents = {iv.var: iv.dom.extent for iv in node.iter_vars if iv.iter_type == tirx.IterVar.DataPar}
    if not all(isinstance(extent, tirx.IntImm) for extent in extents.values()):
        return None
    channel = node.body.indices[-1]
    channels = next(int(extent) for var, extent in extents.items() if var.same_as(channel))
    pixels = functools.reduce(lambda product, extent: product * int(extent), extents.values(), 1) // channels
    if channels <= MAC_CHANNELS or channels % MAC_CHANNELS == 0 or pixels < WHOLE_TILE_MIN_PIXELS:
        return None
    return channels


def whole_tile_replacement(realize: s_tir.SBlockRealize, loops: list) -> Optional[s_tir.SBlockRealize]:
    """The call block of the depthwise helper of any channel count (DEPTHWISE_MAC_N_OP) or of its padding's
    (DEPTHWISE_PAD_N_OP) for ``loops`` (up to two window loops, then a channel loop of more than MAC_CHANNELS
    channels that MAC_CHANNELS does not divide: `depthwise_whole_tile`'s) around an int8 ``realize``, or None
    where the loads do not fit."""
    channel = loops[-1].extent if loops else None
    if not isinstance(channel, tirx.IntImm) or int(channel) <= MAC_CHANNELS or int(channel) % MAC_CHANNELS == 0:
        return None
    channels = int(channel)
    reduction = mac_reduction(realize.block, ("int8",))
    if reduction is None:
        return padding_replacement(realize, loops, DEPTHWISE_PAD_N_OP, channels)
    if len(loops) > 3 or not all(isinstance(loop.extent, tirx.IntImm) and int(loop.min) == 0 for loop in loops):
        return None
    tile = window_tile_call(reduction, realize, loops, channels)
    if tile is None:
        return None
    sizes, call = tile
    return call(DEPTHWISE_MAC_N_OP, [*sizes, channels])
