"""The Cortex-M backend's kernel schedules (TVM): on cores with the DSP extension, MAC reductions as calls of
the helpers of `backends.cortex_m.helpers`.

- `dual_mac`: CONV_2D / FULLY_CONNECTED reductions as the dual MAC (SMLAD), one or two pixels per call;
- `stacked_mac`: an int8 FULLY_CONNECTED's reduction over weights the lowering stacked two channels to an int16
  half (`KernelSchedules.stacked_rows`, DSP cores without MVE) as the stacked MAC, one call per four channels, or
  over weights it widened to int16 SMLAD pairs (`KernelSchedules.widened_rows_pay`: where the model's such layers
  pay the helpers and the flash holds them) as the widened MAC;
- `depthwise_mac`: DEPTHWISE_CONV_2D reductions (and the choice among the MAC helpers); `row_dot`: an SVDF's
  time product;
- `pixel_pairs`, `pair_q15`, `flat_pixels`: two output pixels per call (inside a padded image's interior, the
  pair's inputs widened once, across odd-width rows);
- `border_window`: a padded convolution's border pixel copies its window once (on Helium cores each tap's run of at
  least 16 channels one call of the ascending copy: `copied_runs`);
- `requantize_epilogue`: a MAC kernel's int8 requantization loop over a channel tile as one call of the
  core's epilogue helper (a DSP core's written-out tile, Helium's vector one);
- Helium cores (`simd = "mve"`) take the same calls (their helpers' bodies are MVE) but no q15 pairs, and
  `helium_depthwise`: int8 depthwise reductions in 16-channel tiles, one 16-lane helper call each.
- `pair_tiles` (DSP cores without MVE): after the epilogue calls, a convolution's pixel pair over all its channel
  tiles as one call of the fused helper (inputs widened once, sums started at the biases); `quad_tiles`: then a
  loop over a short window's pair calls as calls of two pairs each (each channel's weights widened once for four
  pixels); on Helium cores, one
  call of the pair's out-of-line tiles (`pair_tiles.HELIUM_PAIR_TILES`: the same dual MAC and epilogue calls);
- `fc_tiles` (DSP cores without MVE): then an int8 FULLY_CONNECTED's loop over its tiles of stacked weights (zeroed
  accumulators, the stacked MAC, the epilogue) as one call of the fused out-of-line helper;
- `conv_tiles`: then a loop over an int8 convolution's channel tiles (zeroed
  accumulators, the dual MAC, the epilogue) as one call of the core's fused helper (Helium's, the DSP cores');
- `depthwise_tiles`: then a depthwise pixel's loop over its 16- or 8-channel tiles (zeroed
  accumulators, the window and padding calls under position tests, the epilogue) as fused calls, one per case;
  on DSP cores an interior pixel's loop over its four-channel tiles as one fused call (the border keeps the loop);
  on Helium the interior's fused helper inlined, or called out of line in the kernels the bundle's choice gives a
  shared copy (`helium_bundle_choice`: from every kernel scheduled first, `KernelSchedules.bundle_choice`);
  `shared_conv_tiles`: likewise the kernels whose channel tiles call the fused helper's out-of-line copy on Helium;
  `outlined_borders`: the kernels whose border pixels call the table-form tiles' copy (the interior's inlined);
- `fc_rows` (Helium, and RV32 cores through `backends.riscv.schedules`): then a per-tensor int8 FULLY_CONNECTED
  row's loop over its channel tiles (zeroed accumulators, the one-row MAC, the scalar requantization by constants)
  as one call of the family's shared row helper, one copy per bundle for every such layer;
- `common_tails` (Helium): last, a statement both branches of a test end with (the MAC call after a copied
  window, inside the image or with the padding) once after the test: one inlined copy of the fused tiles, not two;
  and the fused tiles' calls of an interior pixel and a border pixel's copied window as one call after the test,
  its input's address and row stride chosen per pixel (`conv_tiles.HELIUM_TAIL_CHOICES`);
- `helium_float` (Helium, and with `FPU_FLOAT_OPS` DSP cores with a scalar FPU: cortex-m4f, m7, m33): a float
  CONV_2D / FULLY_CONNECTED reduction tiled to output channels (one or two pixels) as one call of the float
  multiply-accumulate (Helium's four float lanes per vector; the scalar FPU's groups of eight channels)
  (`padded_float_calls`, then each tile's bias and activation one call: `float_epilogue_calls`, both before the
  integer passes); `float_tiles` (the scalar-FPU cores, `FpuDualMacSchedules`): then a pixel's loop over its
  one-pixel float tiles as one call of the fused float tiles helper;
- `helium_qlinear` (Helium): onnxruntime's QLinearConv of an NCHW int8 image as calls of the vector helpers (a
  pointwise one's per output channel, any other's per output row), the kernel the int8 lowering writes
  (`KernelSchedules.qlinear_conv`);
- `helium_add` (Helium): int8 ADD as one call of the vector ADD helper, the kernel the int8 lowering writes
  (`KernelSchedules.int8_add`);
- `softmax_rows` (cores with the DSP extension, Helium's too): int8 SOFTMAX as one call of the row softmax
  helper, the kernel the int8 lowering writes (`KernelSchedules.int8_softmax`);
- `batch_matmul`: int8 BATCH_MATMUL as one call of the batch matmul helper per matrix of the batch (DSP cores without
  MVE: both operands widened once, 2x2 tiles of dual MACs; Helium: its twin, VMLADAVA on the operands as they are,
  the zero points by row and column sums), the kernel the int8 lowering writes (`KernelSchedules.int8_batch_matmul`);
- `pool_sums` (cores with the DSP extension, Helium's too): an int8 AVERAGE_POOL_2D, MEAN or SUM of more than nine
  taps a window as window sums four channels a word (SXTAB16 into 16-bit pairs), the kernels the int8 lowering writes
  (`KernelSchedules.int8_window_sums`: the word ops `tvm_ext.kernels.window_sums` calls);
- `window1_conv` (DSP cores without MVE): an int8 convolution whose window reads few input channels (an RGB stem)
  as one call of the few-channel helper (four pixels per weight word), the kernel the int8 lowering writes
  (`KernelSchedules.few_channel_conv`), after `pointwise_few`'s: a 1x1 window over one to four channels as one call
  of the pointwise helper (each pixel's inputs one word, two SMLAD an output);
- `depthwise_runs` (DSP cores without MVE): an int8 DEPTHWISE_CONV_2D of channels not whole tiles of four, stepping
  one column, as its output rows' runs of four elements, each a call of the fused depthwise tile, the kernel the
  int8 lowering writes (`KernelSchedules.few_channel_depthwise`);
- `biased_requantize` (DSP and Helium cores): last, an element loop's (an int8 elementwise chain's, an integer
  QUANTIZE's) scalar requantizations and the zero points after them as calls of the biased requantization (SMMLAR
  with the zero point in its bias);
- `extern_helpers`: the helpers inside a TE extern kernel (the SVDF state update, the copy runs, the maximum runs of
  int8 MAX_POOL_2D, which `kernel_schedules` asks the lowering for (on Helium the maximum's twin, 16 lanes a VMAX),
  and on DSP cores without MVE an int8 LSTM's gate products over interleaved weights as the interleaved dual MAC).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import replace
from math import prod
from typing import Optional

from tvm import tirx

from backends.backend import BundleChoice, KernelSchedules
from backends.code_price import THUMB2_DSP_KERNEL_CODE, THUMB2_KERNEL_CODE
from backends.cortex_m.cores import has_dsp_extension, has_mve
from backends.cortex_m.helpers.dual_mac_c import DUAL_MAC_GROUP
from backends.cortex_m.schedules import pair_tiles
from backends.cortex_m.schedules.batch_matmul import helium_int8_batch_matmul, int8_batch_matmul
from backends.cortex_m.schedules.biased_requantize import biased_requantize_calls
from backends.cortex_m.schedules.border_window import (HELIUM_COPIED_ROW_BYTES, HELIUM_INT8_LANES, ROWS_WRITTEN_OUT,
                                                       copied_runs, copied_window_length, has_short_rows, window_buffer,
                                                       windowed_border)
from backends.cortex_m.schedules.common_tails import common_tails
from backends.cortex_m.schedules.conv_tiles import (DSP_CONV_TILES, HELIUM_CONV_TILES, HELIUM_GENERIC_CONV_TILES,
                                                     HELIUM_SHARED_CONV_TILES,
                                                     HELIUM_TAIL_CHOICES, TABLE_FORM, ConvTileHelpers, conv_tiles_calls,
                                                     executions, one_row_padding_pays)
from backends.cortex_m.schedules.conv_tiles import pays_two_pixels as helium_pays_two_pixels
from backends.cortex_m.schedules.depthwise_pairs import depthwise_pair_calls, priced_per_call
from backends.cortex_m.schedules.depthwise_tiles import (DSP_TILES, DSP_TILES_S8, DSP_WINDOW_TAPS, HELIUM_TILES,
                                                          TileHelpers, depthwise_tiles_calls, dsp_replacement,
                                                          form_uses, shared_tiles)
from backends.cortex_m.schedules.depthwise_mac import mac_helper_call
from backends.cortex_m.schedules.depthwise_spread import dsp_mac_replacement
from backends.cortex_m.schedules.dsp_add import dsp_add_values
from backends.cortex_m.schedules.dual_mac import mac_reduction
from backends.cortex_m.schedules.extern_helpers import HELIUM_MAX_OPS, extern_helper_calls
from backends.cortex_m.schedules.fc_rows import HELIUM_FC_ROWS, fc_rows_calls
from backends.cortex_m.schedules.fc_tiles import fc_tiles_calls, one_pixel_rows_pay, widened_rows_pay
from backends.cortex_m.schedules.flat_pixels import flatten_odd_pixel_rows
from backends.cortex_m.schedules.float_tiles import float_tiles_calls
from backends.cortex_m.schedules.helium_add import helium_add_int8, helium_adds_pay
from backends.cortex_m.schedules.helium_add_values import helium_add_values, values_first_pays
from backends.cortex_m.schedules.helium_qlinear import fits_qlinear_conv, helium_qlinear_conv
from backends.cortex_m.schedules.helium_depthwise import depthwise_channel_tiles, helium_replacement
from backends.cortex_m.schedules.helium_float import (FPU_FLOAT_OPS, HELIUM_FLOAT_TILE_MIN_MACS, float_epilogue_calls,
                                                      float_mac_replacement, padded_float_calls)
from backends.cortex_m.schedules.helium_shared_borders import border_uses, shared_borders
from backends.cortex_m.schedules.pair_tiles import HELIUM_PAIR_TILES, pair_tiles_calls, without_pair_scratch
from backends.cortex_m.schedules.pool_sums import POOL_WORD_OPS
from backends.cortex_m.schedules.pixel_pairs import pair_odd_pixel_row, pair_tests, paired_pixel_body
from backends.cortex_m.schedules.quad_tiles import quad_code_budget, quad_kernels, quad_tiles_calls, quad_uses
from backends.cortex_m.schedules.requantize_epilogue import (DSP_EPILOGUE, HELIUM_EPILOGUE, may_shift_left,
                                                              requantize_epilogue_calls, with_left_shifts_recorded)
from backends.cortex_m.schedules.outlined_borders import outlined_border_calls, outlined_borders
from backends.cortex_m.schedules.shared_conv_tiles import conv_tiles_uses, generic_conv_tiles, shared_conv_tiles
from backends.cortex_m.schedules.unreached_branches import unreached_branches
from backends.cortex_m.schedules.tiles_16x8 import CORTEX_M_TILES_16X8, outlined_16x8_macs, tiles_16x8_calls
from backends.cortex_m.schedules.softmax_rows import softmax_s8_rows
from backends.cortex_m.schedules.pointwise_few import few_channel_kernel
from backends.cortex_m.schedules.depthwise_rows import own_for_kernel_stack
from target.profile import Profile
from tvm_ext.schedule.float_schedule import FPU_CHANNEL_TILES
from tvm_ext.tir.identical_kernels import identical_groups
from tvm_ext.tir.tir_walk import vars_read


class DualMacSchedules:
    """The `backends.backend.MacSchedules` of cores with the DSP extension (SMLAD, SXTB16)."""

    def __init__(self, quads: bool = False, calls: int = 1) -> None:
        self.quads = quads
        """Whether a short window's loops of pair calls become quad calls (`quad_tiles`): the bundle's choice for
        the kernels it pays in (`dsp_bundle_choice`); False on every other kernel."""
        self.calls = calls
        """The kernel's calls per inference, for the price of its depthwise pixels' forms (`depthwise_pairs`): the
        bundle's count for a kernel called several times (`dsp_bundle_choice`); 1 on every other kernel."""

    def with_choice(self, quads: bool, calls: int) -> "DualMacSchedules":
        """These schedules (their class: the core's) with the bundle's choices for one kernel."""
        return type(self)(quads, calls)

    @staticmethod
    def extern_calls(func: tirx.PrimFunc) -> tirx.PrimFunc:
        """A function of one TE extern stage with the loops in the helpers' forms as their calls
        (`extern_helpers`), then its constant scalar requantizations and the zero points after them as calls of the
        biased requantization (`biased_requantize`; a MEAN's window sums, four channels a word, rescale each output
        so: cortex-m4f, mobilenet_v3s_050_96's five MEANs of 6x6 pixels 3 instructions an output fewer)."""
        return biased_requantize_calls(extern_helper_calls(func), extern_stage=True)

    flatten_odd_pixel_rows = staticmethod(flatten_odd_pixel_rows)
    pays_two_pixels = staticmethod(pair_tiles.pays_two_pixels)
    helper_call = staticmethod(functools.partial(mac_helper_call, replacement=dsp_mac_replacement))
    # the pairs of a kernel with the DSP epilogue unwidened: fused later (pair_tiles), their helper widens them
    pair_odd_pixel_row = staticmethod(pair_tiles.pair_odd_pixel_row)
    replacement = staticmethod(dsp_replacement)  # the MAC helpers', and a depthwise border's padding products
    window_buffer = staticmethod(window_buffer)
    has_short_rows = staticmethod(has_short_rows)
    windowed_border = staticmethod(functools.partial(windowed_border, rows_written_out=ROWS_WRITTEN_OUT))
    paired_pixel_body = staticmethod(pair_tiles.paired_pixel_body)
    paired_windows = staticmethod(pair_tiles.paired_windows)
    pair_tests = staticmethod(pair_tests)
    branch_accumulators = True  # measured on DSP cores (tvm_ext.schedule.border_split._own_accumulators)
    windows_without_interior = True

    @staticmethod
    def collapses_border(image_dtypes: frozenset[str], window: tuple[int, ...]) -> bool:
        """Whether a depthwise border of any rectangles is one call of the border helper (depthwise_tiles,
        DSP_TILES): its int8 images of windows of up to DSP_WINDOW_TAPS taps."""
        return image_dtypes == {"int8"} and prod(window) <= DSP_WINDOW_TAPS

    # measured on DSP cores: micro_speech's 4-unit FULLY_CONNECTED (stacked MAC) 80,080 -> 18,322 instructions
    whole_channel_tile = True

    @staticmethod
    def keeps_scalar(sch, block, loops: list, first_reduce: int) -> bool:
        """Whether an int8 MAC reduction keeps its scalar loop nest, untiled: one output row (every loop outside
        the output channels' of one iteration) of a product whose input the channels share (a FULLY_CONNECTED's or
        a one-pixel convolution's, not a depthwise one's) and of fewer products per output than the dual MAC's
        group of inputs (DUAL_MAC_GROUP), which its helper would run all in its scalar tail, the four
        accumulators stored to the stack and read back by the epilogue (hello_world's 1 -> 16 FULLY_CONNECTED:
        cortex-m4f 305 -> 238 instructions, the bundle's code 76 B smaller; cortex-m55 199 -> 251, 128 B smaller)."""
        body = sch.get(block)
        reduction = mac_reduction(body)
        outer, products = (executions(tuple(sch.get(loop) for loop in part))
                           for part in (loops[:max(first_reduce - 1, 0)], loops[first_reduce:]))
        if reduction is None or first_reduce == 0 or outer != 1 or products >= DUAL_MAC_GROUP:
            return False
        channel = body.iter_vars[first_reduce - 1].var
        return channel not in vars_read(reduction.data)

    def epilogue_calls(self, func):
        """Each channel tile's "double_small" requantization as one call of the DSP epilogue helper, then each
        convolution's loop over a pixel pair's channel tiles (zeroed accumulators, the two-pixel MAC, the
        pixels' epilogues) as one call of the fused pair-tiles helper (`pair_tiles`: the pair's inputs widened
        once), with `quads` a loop over such calls of a short window as half as many calls of the quad helper
        (`quad_tiles`: two pairs a call), then each loop over a pixel's channel tiles (zeroed accumulators, the
        dual MAC, that epilogue) as one call of the fused channel-tiles helper (`conv_tiles`, DSP_CONV_TILES), and each depthwise pixel's
        loop over its four-channel tiles (zeroed accumulators, the window call, that epilogue) as one call of the
        fused tiles helper for an interior pixel and one call of the border helper for a border pixel
        (`depthwise_tiles`, DSP_TILES: int16 weights, widened by the lowering; DSP_TILES_S8 the interior of a layer
        of int8 weights), and a FULLY_CONNECTED's loop over eight or more tiles of stacked weights as one call of the
        fused fully connected tiles (`fc_tiles`): the sums start at the biases in registers; last, an element
        loop's scalar requantizations and the zero points after them as calls of the biased requantization
        (`biased_requantize`)."""
        epilogues = requantize_epilogue_calls(func, helper=DSP_EPILOGUE, partial_tables=True)
        pairs = pair_tiles_calls(epilogues)
        pairs = quad_tiles_calls(pairs) if self.quads else pairs
        tiled = depthwise_tiles_calls(conv_tiles_calls(pairs, DSP_CONV_TILES), DSP_TILES)
        tiled = depthwise_pair_calls(tiled, self.calls)  # two interior pixels a call where that pays
        tiled = fc_tiles_calls(tiled)  # a FULLY_CONNECTED's tiles of stacked weights
        tiled = depthwise_tiles_calls(tiled, DSP_TILES_S8)  # a layer whose weights the lowering did not widen
        return biased_requantize_calls(tiled)  # an element loop's rescales (`biased_requantize`)

    @staticmethod
    def channel_tiles(sch, block) -> tuple[int, ...]:
        """None of its own: every integer MAC reduction takes the profile's tile (four channels)."""
        return ()


class FpuDualMacSchedules(DualMacSchedules):
    """The `backends.backend.MacSchedules` of DSP cores with a scalar FPU and no MVE (cortex-m4f, m7, m33): the DSP
    cores' integer calls, and a float reduction tiled to output channels one call of the scalar FPU's float
    multiply-accumulate (`helium_float`'s schedule with `FPU_FLOAT_OPS`: `fpu_float.h.in`, a tap's weights one VLDM
    per group of eight channels), a padded one's interior tiles too and each tile's bias and activation one call of
    its epilogue, before the integer passes (as on Helium)."""

    helper_call = staticmethod(functools.partial(
        mac_helper_call, replacement=lambda realize, loops: float_mac_replacement(realize, loops, FPU_FLOAT_OPS)
        or dsp_mac_replacement(realize, loops)))

    def epilogue_calls(self, func):
        """A padded float reduction's interior tiles and each float tile's epilogue as calls of the scalar FPU's
        float helpers, a pixel's loop over its one-pixel tiles one call of the fused helper (`float_tiles`), then
        the DSP cores' epilogue calls (`DualMacSchedules.epilogue_calls`)."""
        floats = float_epilogue_calls(padded_float_calls(func, FPU_FLOAT_OPS), FPU_FLOAT_OPS)
        return super().epilogue_calls(float_tiles_calls(floats, FPU_FLOAT_OPS))


def helium_float_or_int_replacement(realize, loops: list) -> Optional[object]:
    """The float multiply-accumulate's call block (`helium_float`) for a float reduction, else Helium's integer
    helpers' (`helium_depthwise.helium_replacement`); None where none fits."""
    return float_mac_replacement(realize, loops) or helium_replacement(realize, loops)


class HeliumMacSchedules(DualMacSchedules):
    """The `backends.backend.MacSchedules` of Helium (MVE) cores: the DSP cores' calls, whose helpers a Helium
    bundle defines with MVE bodies (`backends.cortex_m.helpers.helium_c`), but a padded convolution's pixel
    pair reads its int8 inputs as they are: VMLADAV multiplies int8 lanes, so widening them to q15 once per
    pair (`pair_q15`, which saves SXTB16s on a DSP core) would only add its pass and its scratch; and each channel
    tile's int8 requantization is one call of the vector epilogue (`requantize_epilogue`); an int8 depthwise
    reduction takes 16-channel tiles, each one call of the 16-lane depthwise helper, and a border pixel's
    padding products one call each (`helium_depthwise`); a float reduction tiled to output channels is one call of
    the float multiply-accumulate (`helium_float`)."""

    @staticmethod
    def extern_calls(func: tirx.PrimFunc) -> tirx.PrimFunc:
        """A function of one TE extern stage with the loops in the helpers' forms as their calls
        (`extern_helper_calls`: an SVDF state's shift by the ascending copy, the state shift's STMs measured slower
        on cortex-m55, keyword_scrambled 29,833 -> 32,158 instructions where cortex-m4f's went 47,453 -> 44,194;
        MAX_POOL_2D's taps by the maximum's Helium twin, 16 lanes a VMAX), then its constant scalar
        requantizations as calls of the biased requantization, as on DSP cores (`DualMacSchedules.extern_calls`;
        cortex-m55 vit_tiny_16_int8's MEANs: 1,747,605 -> 1,746,694 instructions, 12 B less code)."""
        return biased_requantize_calls(extern_helper_calls(func, state_shift=False, max_ops=HELIUM_MAX_OPS),
                                       extern_stage=True)

    flatten_odd_pixel_rows = staticmethod(functools.partial(flatten_odd_pixel_rows, odd_only=False))
    helper_call = staticmethod(functools.partial(mac_helper_call, replacement=helium_float_or_int_replacement))
    replacement = staticmethod(helium_replacement)
    channel_tiles = staticmethod(depthwise_channel_tiles)
    pays_two_pixels = staticmethod(helium_pays_two_pixels)
    pair_odd_pixel_row = staticmethod(functools.partial(pair_odd_pixel_row, widen_inputs=False))
    paired_pixel_body = staticmethod(functools.partial(paired_pixel_body, widen_inputs=False))
    paired_windows = None  # not measured on Helium: a border pixel there keeps its window to itself
    windowed_border = staticmethod(windowed_border)  # not measured on Helium: an interior copy keeps its row loop
    # a one-pixel window of rows under eight vectors copied (each row one run of the ascending copy: `copied_runs`)
    has_short_rows = staticmethod(functools.partial(has_short_rows, short_row_bytes=HELIUM_COPIED_ROW_BYTES))
    branch_accumulators = False  # not measured on Helium: its fused channel-tiles helper keeps no accumulators

    @staticmethod
    def collapses_border(image_dtypes: frozenset[str], window: tuple[int, ...]) -> bool:
        """Whether a depthwise border of any rectangles is one call of Helium's border helper (depthwise_tiles,
        HELIUM_TILES): its int8 images of a 5x5 window, the one square window whose border makes more rectangles than
        `tvm_ext.schedule.border_split.MAX_REGIONS` and has an out-of-line border copy of its own
        (`_depthwise_border5x5_s8`); a 3x3 window's makes 9 at most. Without it such a border kept its per-tap
        tests: measured on cortex-m55, an EfficientNet-lite at width 0.25 on 76x60, its 5x5 layer on 10x8x96
        773,978 -> 285,825 instructions."""
        return image_dtypes == {"int8"} and window == (5, 5)
    whole_channel_tile = False  # not measured on Helium

    def __init__(self, tiles: TileHelpers = HELIUM_TILES, conv_tiles: ConvTileHelpers = HELIUM_CONV_TILES,
                 outlined_borders: bool = False) -> None:
        self.outlined_borders = outlined_borders
        """Whether the kernel's border pixels call the table-form tiles' out-of-line copy (`outlined_borders`:
        `helium_bundle_choice`)."""
        self.tiles = tiles
        """The depthwise tiles' helpers (`depthwise_tiles`), with the bundle's choice of the forms whose
        out-of-line copy its kernels share (`TileHelpers.shared`: `helium_bundle_choice`)."""
        self.conv_tiles = conv_tiles
        """The fused channel tiles' helpers (`conv_tiles`): inlined (HELIUM_CONV_TILES), or the bundle's one
        out-of-line copy in the kernels its choice gives it (HELIUM_SHARED_CONV_TILES: `helium_bundle_choice`), or
        the table forms' generic copy (HELIUM_GENERIC_CONV_TILES: `shared_conv_tiles.generic_conv_tiles`)."""

    def epilogue_calls(self, func):
        """Each channel tile's int8 requantization as one call of the vector epilogue, then each loop over a pixel
        pair's channel tiles as one call of their out-of-line copy (`pair_tiles.HELIUM_PAIR_TILES`), each loop over
        a pixel's channel tiles (zeroed accumulators, the dual MAC, that epilogue) as one call of the fused
        channel-tiles helper (`conv_tiles`; with ``outlined_borders``, a border pixel's table form a call of its
        out-of-line copy: `outlined_borders`), each depthwise pixel's (`depthwise_tiles`), and a per-tensor fully
        connected layer's loop over its channel tiles as one call of the shared row helper (`fc_rows`); first, each
        test that goes one way at every iteration reaching it reduced to that branch (`unreached_branches`: a padded
        convolution's interior pixel that no pair covers, where the pairs cover them all), then a padded
        float reduction's tiles whose window lies inside the image as calls of the float MAC
        (`helium_float.padded_float_calls`; the others keep their guarded loops), and a float tile's bias and
        activation as one call of the float epilogue (`helium_float.float_epilogue_calls`); last, a statement both
        branches of a test end with (a copied window's MAC call; the fused tiles' calls on an interior pixel's
        inputs and on a border pixel's copied window) once after the test (`common_tails`), an element loop's scalar
        requantizations and the zero points after them as calls of the biased requantization (`biased_requantize`:
        SMMLAR, which Helium cores have too; its shift and bias arguments let an unrolled GRU's gate kernels share
        one C function across their shifts, tvm_ext.transform.share_constant_variants: kws_gru20_25x13 cortex-m55
        21,048 -> 13,340 B of code, 114,799 -> 109,006 instructions); a kernel whose
        requantization may shift left (`requantize_epilogue.may_shift_left`: TFLite's double rounding, not its
        right-shift-only variants) calls the no-op that has its bundle define the vector requantization's VSHL by
        positive shifts (`with_left_shifts_recorded`), which a bundle of right shifts only leaves out. First of all, a
        16x8 layer's loop over a pixel's channel tiles becomes one call of the fused 16x8 tiles' out-of-line copy
        (`tiles_16x8`)."""
        tiles_16x8 = outlined_16x8_macs(tiles_16x8_calls(func, CORTEX_M_TILES_16X8), keep_widest=True)
        floats = float_epilogue_calls(padded_float_calls(unreached_branches(tiles_16x8)))
        epilogues = requantize_epilogue_calls(floats, helper=HELIUM_EPILOGUE)
        tiles = conv_tiles_calls(pair_tiles_calls(epilogues, HELIUM_PAIR_TILES), self.conv_tiles)
        tiles = outlined_border_calls(tiles) if self.outlined_borders else tiles
        tailed = common_tails(copied_runs(fc_rows_calls(depthwise_tiles_calls(tiles, self.tiles), HELIUM_FC_ROWS),
                                          HELIUM_INT8_LANES), HELIUM_TAIL_CHOICES)
        tailed = biased_requantize_calls(tailed)  # an element loop's rescales (`biased_requantize`)
        # a requantization that may shift left has its bundle define the vector requantization's VSHL
        return with_left_shifts_recorded(tailed) if may_shift_left(func) else tailed


def helium_bundle_choice(kernels: Mapping[str, tirx.PrimFunc], calls: Mapping[str, int]) -> Optional[BundleChoice]:
    """The `KernelSchedules.bundle_choice` of Helium cores: from the bundle's kernels (scheduled with the depthwise
    tiles' and the channel tiles' fused helpers inlined) and their calls, which kernels call which forms' out-of-line
    copies of the depthwise tiles (`depthwise_tiles.form_uses`, `shared_tiles`), whose 3x3 border pixels call the
    border copy running the interior's (`helium_shared_borders.shared_borders`) and which the channel tiles' copy
    (`shared_conv_tiles`), and whose border pixels call the table-form tiles' copy (`outlined_borders`; that form's
    copy then specialized on no kernel's window), each with the Helium schedules carrying its choices; None where
    every kernel keeps the helpers inlined."""
    tiles = shared_tiles(form_uses(kernels, calls, HELIUM_TILES))
    forms = tiles.forms_of()
    found_borders = border_uses(kernels, calls)
    borders_chosen = shared_borders(found_borders, tiles)
    borders = {use.kernel: frozenset({key[0]}) for key in borders_chosen for use in found_borders[key]}
    outlined = outlined_borders(kernels, calls)
    uses, present = conv_tiles_uses(kernels, calls)
    # the table forms' copy the border pixels call is generic over their windows: none specialized on a window; a
    # kernel of any window calls it, or the generic copy, where that pays by itself (generic_conv_tiles)
    table_forms = frozenset(bias + TABLE_FORM for bias in outlined)
    outlined_kernels = frozenset().union(*outlined.values())
    joined, generic = generic_conv_tiles(uses, table_forms, outlined_kernels)
    conv_shared = shared_conv_tiles(uses, present | table_forms) | joined
    if not forms and not borders and not conv_shared and not generic and not outlined_kernels:
        return None
    choices = {kernel: (forms.get(kernel, frozenset()), borders.get(kernel, frozenset()),
                        "generic" if kernel in generic else "shared" if kernel in conv_shared else "inlined",
                        kernel in outlined_kernels)
               for kernel in set(forms) | set(borders) | conv_shared | generic | outlined_kernels}
    conv_tiles = {"generic": HELIUM_GENERIC_CONV_TILES, "shared": HELIUM_SHARED_CONV_TILES,
                  "inlined": HELIUM_CONV_TILES}
    schedules = {choice: HeliumMacSchedules(replace(HELIUM_TILES, shared=choice[0], shared_borders=choice[1]),
                                            conv_tiles[choice[2]], choice[3])
                 for choice in set(choices.values())}
    return BundleChoice({kernel: schedules[choice] for kernel, choice in choices.items()})


def dsp_bundle_choice(kernels: Mapping[str, tirx.PrimFunc], calls: Mapping[str, int],
                      schedules: DualMacSchedules) -> Optional[BundleChoice]:
    """The `KernelSchedules.bundle_choice` of DSP cores without MVE: from the bundle's kernels (scheduled without
    quads, each as called once) and their calls, the kernels whose quads pay their inlined code
    (`quad_tiles.quad_uses`, `quad_kernels`: each that pays at the one price of code, the bundle's first loop
    charged more than the others, the best-paying first within the bundle's budget, `quad_code_budget` of its
    kernels), and the kernels called several times whose depthwise pixels' forms are priced per call
    (`depthwise_pairs.priced_per_call`: priced again with their calls, those of its identical twins too, which the
    bundle makes one C function: `identical_groups`), each with ``schedules`` (the core's) carrying those choices;
    None where no kernel takes either."""
    chosen = quad_kernels(quad_uses(kernels, calls), code_budget=quad_code_budget(len(kernels)))
    repeated = {}
    for group in identical_groups(kernels):
        count = sum(calls.get(kernel, 1) for kernel in group)
        if count > 1 and priced_per_call(kernels[group[0]]):
            repeated.update(dict.fromkeys(group, count))
    choices = {kernel: (kernel in chosen, repeated.get(kernel, 1)) for kernel in sorted(chosen | set(repeated))}
    variants = {choice: schedules.with_choice(*choice) for choice in set(choices.values())}
    return BundleChoice({kernel: variants[choice] for kernel, choice in choices.items()}) if choices else None


DUAL_MAC_SCHEDULES = DualMacSchedules()
FPU_DUAL_MAC_SCHEDULES = FpuDualMacSchedules()
HELIUM_MAC_SCHEDULES = HeliumMacSchedules()


def mac_schedules_of(profile: Profile) -> Optional[DualMacSchedules]:
    """The MAC helpers' schedules of `profile`'s core: Helium's on a core with MVE, the DSP cores' on a core
    with the DSP extension (with the scalar FPU's float helpers where the core has hardware float), None on any
    other."""
    if has_mve(profile):
        return HELIUM_MAC_SCHEDULES
    if not has_dsp_extension(profile):
        return None
    return FPU_DUAL_MAC_SCHEDULES if profile.hardware_float else DUAL_MAC_SCHEDULES


def kernel_schedules(profile: Profile) -> KernelSchedules:
    """The schedules of `profile`'s core: 2 accumulators per integer MAC kernel on Armv6-M (eight low
    registers), 4 elsewhere; float MAC kernels tiled by FPU_CHANNEL_TILES on an Arm core with an FPU; the
    MAC helpers' schedules on cores with the DSP extension, Helium's own on cores with MVE
    (`mac_schedules_of`, `backends.cortex_m.cores`); int8 MAX_POOL_2D as maximum runs on cores with the DSP
    extension (Helium's: the maximum's Helium twin) and PAD as copy runs on DSP cores without MVE (`tvm_ext.kernels.copy_runs.pad_runs`, the word copy's calls); int8 ADD as Helium's vector helper
    on cores with MVE where the model's ADDs pay it (`helium_add`, `helium_adds_pay`), and an int8 QLinearConv as
    Helium's (`helium_qlinear`); int8 SOFTMAX as one
    call of the softmax helper on cores with the DSP extension, MVE's too (`softmax_rows`); int8 BATCH_MATMUL as the
    batch matmul helper's calls on DSP cores without MVE and its Helium twin's on cores with MVE (`batch_matmul`); a copied CONV_2D
    window padded with zero weights (`border_window.copied_window_length`): to whole groups of four on DSP cores without MVE, to whole vectors of
    16 int8 lanes on cores with MVE (`border_window.HELIUM_INT8_LANES`: no predicated last vector); on DSP cores
    without MVE, LSTM gate weights interleaved for the interleaved dual MAC (`extern_helpers`), on cores with MVE each
    recurrent cell's product one call of the rows MAC over TFLite's rows (`extern_helpers`); on DSP cores without
    MVE, a kernel's fused pair tiles without their scratch where the plan asks (`pair_tiles.without_pair_scratch`),
    and the kernels whose quad tiles pay their inlined code (`dsp_bundle_choice`); on cores with the DSP extension
    (MVE's too), int8 AVERAGE_POOL_2D, MEAN and SUM as window sums four channels a word (`pool_sums`)."""
    dsp_only = has_dsp_extension(profile) and not has_mve(profile)
    # the few-channel depthwise kernel's band within the stack the profile lets one kernel's arrays take
    own_depthwise, pixel_tiles_take, rows_take = own_for_kernel_stack(profile.kernel_stack_bytes)
    return KernelSchedules(
        output_channel_tile=2 if profile.arch == "armv6-m" else 4,
        float_channel_tiles=FPU_CHANNEL_TILES if profile.hardware_float and profile.arch.startswith("armv") else (),
        mac=mac_schedules_of(profile),
        # the DSP helpers' running maximum, on Helium its twin (16 lanes a VMAX: yolo_tiny_96_w8's 2x2 pools had kept
        # the element-wise kernel, 3.8-4.0 instructions per input byte where cortex-m4f's runs take 0.8-1.0)
        max_pool_runs=has_dsp_extension(profile),
        # the DSP cores' stacked-rows MAC (Helium's dual MAC multiplies int8 lanes: nothing to widen there)
        stacked_rows=dsp_only,
        # ... widened to int16 where the model's layers pay the helpers and the flash holds them
        widened_rows_pay=widened_rows_pay if dsp_only else None,
        int8_add=helium_add_int8 if has_mve(profile) else None,
        # a float MAC kernel of few MACs keeps one accumulator: its tile's code costs more than it saves
        float_tile_min_macs=HELIUM_FLOAT_TILE_MIN_MACS if has_mve(profile) else 0,
        int8_add_pays=helium_adds_pay if has_mve(profile) else None,
        # the DSP cores' ADD, SUB and SQUARED_DIFFERENCE from their operands' tabled values (measured on cortex-m4f), on
        # Helium too where its own ADD does not take the operator (two computed operands of one shape): cortex-m55's
        # generic kernels took 13-14 instructions per output byte (vit3h_28: 1,756,137 -> 1,663,818 instructions,
        # code 9,988 -> 9,900 B; vit_tiny_16: 1,898,215 -> 1,801,640, 8,848 -> 8,732 B)
        # ... on Helium four outputs a call where its operands are of one shape (`helium_add_values`), before its own
        # ADD, which builds the same tables at run time, where its code pays (simple_add_model: code 316 -> 132 B,
        # cortex-m4f's 148 B)
        int8_add_values=helium_add_values if has_mve(profile) else dsp_add_values if has_dsp_extension(profile)
        else None,
        int8_add_values_first=values_first_pays if has_mve(profile) else None,
        # the int8 softmax helper on every core with the DSP extension, MVE's too (cortex-m55: the helper's kernel
        # 796 -> 404 B on kws_ref_model, and faster; the generic kernel's fixed-point arithmetic is 64-bit)
        int8_softmax=softmax_s8_rows if has_dsp_extension(profile) else None,
        # the DSP cores' int8 batch matmul, both operands widened once and 2x2 tiles of dual MACs (measured on
        # cortex-m4f), on Helium its twin: VMLADAVA on the operands as they are, the zero points by row and column sums
        int8_batch_matmul=int8_batch_matmul if dsp_only else helium_int8_batch_matmul if has_mve(profile) else None,
        # the DSP cores' window sums of int8 AVERAGE_POOL_2D, MEAN and SUM, four channels a word (measured on
        # cortex-m4f; on cortex-m55, where the generic kernels took 2.8-3.1 instructions per input byte, vit3h_28's
        # MEANs 1.3 and its global pool 1.2)
        int8_window_sums=POOL_WORD_OPS if has_dsp_extension(profile) else None,
        # the DSP cores' kernel of a window over few input channels (measured on cortex-m4f; Helium keeps the
        # generic kernel until measured)
        few_channel_conv=few_channel_kernel if dsp_only else None,
        # ... and of a depthwise layer of channels not whole tiles of four, or of a 3x3 window as channel rows
        # (measured on cortex-m4f)
        few_channel_depthwise=own_depthwise if dsp_only else None,
        # ... whose pixel tiles read an even channel count's weights widened to int16 (the lowering widens them there)
        depthwise_pixel_tiles=pixel_tiles_take if dsp_only else None,
        # ... and whose channel rows read int8 weights as they are (the lowering keeps them int8 there)
        depthwise_rows_take=rows_take if dsp_only else None,
        # the dual MAC computes whole tiles of four channels: a FULLY_CONNECTED or CONV_2D of other channel counts
        # pads them (measured on cortex-m4f; on cortex-m55, where such a layer kept the scalar loop nest,
        # ds_cnn_w30_49x10's 30-channel 1x1 layers 534,529 -> 150,397 instructions, its 10x4 stem 2,473,116 -> 199,044)
        dense_unit_tile=4 if has_dsp_extension(profile) else 0,
        # ... a layer of one output row (a one-pixel convolution, a one-row FULLY_CONNECTED of any channels) too, where
        # its MACs pay the padded kernel's code (cortex-m55: pretrainedResnet_quant's 64 -> 10 head padded saved 2,333
        # instructions for 108 B of code, vit_tiny_16's 48 -> 10 1,713 for 104 B)
        one_row_padding_pays=one_row_padding_pays if has_dsp_extension(profile) else None,
        # ... and one whose 1x1 window reads its whole input of one pixel as a FULLY_CONNECTED's stacked rows
        one_pixel_rows_pay=one_pixel_rows_pay if dsp_only else None,
        qlinear_conv=helium_qlinear_conv if has_mve(profile) else None,
        qlinear_conv_fits=fits_qlinear_conv if has_mve(profile) else None,
        qlinear_channels_last=dsp_only,
        # a depthwise QLinearConv's window of up to 5x5 taps unrolled (cortex-m4f, mobilenet_v2_050_72's 3x3 layers of
        # 96 channels over 18x18 and 16 over 36x36: 10.2 and 7.0 -> 4.5 instructions per MAC)
        qlinear_unrolled_taps=25 if dsp_only else 0,
        kernel_code=THUMB2_DSP_KERNEL_CODE if has_dsp_extension(profile) else THUMB2_KERNEL_CODE,
        conv_weight_length=functools.partial(copied_window_length, group=HELIUM_INT8_LANES, tail_min=1,
                                             short_row_bytes=HELIUM_COPIED_ROW_BYTES)
        if has_mve(profile) else copied_window_length if has_dsp_extension(profile) else None,
        # the DSP helpers' interleaved dual MAC (Helium defines none: its dual MAC keeps the row-major weights)
        interleaved_gate_weights=dsp_only,
        # ... and on Helium each product one out-of-line call over TFLite's rows (its rows MAC), where each gate's or
        # filter tile's product had an inlined dual MAC (cortex-m55 kws_lstm_40x16_int8: eight inlined copies)
        whole_gate_rows=has_mve(profile),
        # an SVDF's time product unit after unit, one row dot product each, requantized from a register (measured on
        # cortex-m4f: keyword_scrambled 53,398 -> 49,221 instructions, _8bit 52,648 -> 48,982; on cortex-m55 for an
        # int16 state, 36,107 -> 32,059, while Helium's row dot product of four int8 rows stays faster: 28,036
        # against 33,933)
        svdf_unit_rows=("int8", "int16") if dsp_only else ("int16",) if has_dsp_extension(profile) else (),
        # ... widened to int16 for an LSTM's gates and an SVDF's feature product where the flash holds them (its int16
        # interleaved MAC: 11.5 instructions per 16 MACs against 19.5, measured on cortex-m4f; Helium defines none),
        # and for an int8 SVDF's time rows in SXTB16's lane order (keyword_scrambled_8bit on cortex-m4f: 43,664 ->
        # 41,901 instructions, code 4,448 -> 4,392 B, weights 5,120 B more)
        widened_gate_weights=dsp_only,
        # the DSP depthwise helpers' int16 weights (Helium's lanes multiply int8 weights: nothing to widen there):
        # every window whose border the border helper takes (its helpers read int16 weights only)
        widened_depthwise_taps=DSP_WINDOW_TAPS if dsp_only else 0,
        # a 16x8 CONV_2D's and FULLY_CONNECTED's weights as int16, a word of them one SMLAD with a word of inputs
        # (`dual_mac_w16.h.in`; measured on cortex-m4f; Helium keeps its int8 weights' helpers until measured)
        widened_16x8_weights=dsp_only,
        # per-tensor convolutions requantize from per-channel constants too: the DSP and Helium convolution helpers
        # (window1_conv, the fused pair and conv tiles, the depthwise runs) take no immediates (measured on cortex-m4f:
        # a ResNet-18 at width 6 on 52x44 with per-tensor weights 3,548,516 -> 2,476,341 instructions, as its
        # per-channel twin's 2,476,239; code 13,480 -> 15,084 B, 670 instructions a byte)
        channel_requantization=has_dsp_extension(profile),
        # PAD and TRANSPOSE as runs of the copy helper on every DSP core, Helium's too (cortex-m55, a causal TCN on
        # 75x20 of 24 channels: its PADs 16-18k -> 1.6-2.8k instructions each, the model 779,705 -> 658,253, code
        # 6,664 -> 6,744 B)
        pad_runs=has_dsp_extension(profile),
        # CONCATENATION's runs of 3 bytes more than whole words as whole words: the copy helper's unaligned word on
        # every DSP core (Armv7E-M, Armv8-M Mainline; measured on cortex-m4f)
        word_runs=has_dsp_extension(profile),
        # the fused pair tiles without their widened inputs' scratch, where the plan is smaller so (DSP cores)
        scratch_free_form=without_pair_scratch if dsp_only else None,
        # Helium: the forms of its fused depthwise helper the bundle's kernels share one out-of-line copy of; DSP
        # cores: the kernels whose quad tiles pay their inlined code, and the depthwise pixels' forms of a kernel
        # called several times priced with its calls
        bundle_choice=helium_bundle_choice if has_mve(profile) else functools.partial(
            dsp_bundle_choice, schedules=mac_schedules_of(profile)) if dsp_only else None,
    )
