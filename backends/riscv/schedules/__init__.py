"""The RISC-V backend's kernel schedules (TVM): eight accumulators per integer MAC kernel, and the reductions of CONV_2D
and FULLY_CONNECTED kernels as calls of the int8 window MAC (`mac`: `<prefix>_mac_s8x8`), two output pixels per call
(`<prefix>_mac_s8x2x8`, `<prefix>_mac_s8x2x8_row` for one-row windows) where the Cortex-M schedules pair them
(`backends.cortex_m.schedules`: an unpadded convolution's pixel loop, odd rows fused or ending in a lone pixel, a
padded one's interior), and a padded convolution's border pixels copying their window once
(`backends.cortex_m.schedules.border_window`), with the RISC-V helpers' calls in place of the dual MAC's and the
inputs kept int8 (odd pixel rows fused over paired weight words too: `mac.paired_or_int8_reduction`);
DEPTHWISE_CONV_2D reductions as calls of the int8 depthwise MAC (`<prefix>_depthwise_mac_s8x8`, on the interior's and
a padded border's clipped windows alike, the border's taps outside the image as calls of
`<prefix>_depthwise_pad_s8x8`), then each pixel's loop over its channel tiles as one call of the fused depthwise tiles
(`<prefix>_depthwise_tiles_s8x8` for an interior pixel, `<prefix>_depthwise_border_s8x8` for a border one:
`backends.cortex_m.schedules.depthwise_tiles`, `RISCV_DEPTHWISE_TILES`); a channel tile's "double_small" requantization loop as one
call of `<prefix>_requantize_small_s8` (`backends.riscv.schedules.mac.RISCV_EPILOGUE`); a per-tensor FULLY_CONNECTED
layer's loop over its channel tiles as one call of the shared out-of-line row helper (`<prefix>_fc_rows_s8x8`:
`backends.cortex_m.schedules.fc_rows`, `backends.riscv.schedules.mac.RISCV_FC_ROWS`); a convolution's pixel
pair's loop over its channel tiles as one call of the shared out-of-line pair helper (`<prefix>_pair_tiles_s8x8`: `backends.cortex_m.schedules.pair_tiles`,
`RISCV_PAIR_TILES`), and a lone or border pixel's as one call of its one-pixel form
(`<prefix>_conv_tiles_s8x8`: `backends.cortex_m.schedules.conv_tiles`, `RISCV_CONV_TILES`). A kernel of exactly
eight output channels is tiled too.
In a TE extern stage (an LSTM's gates, the SVDF state update) a product over interleaved weights becomes one call of
the interleaved MAC (`<prefix>_dual_mac_s8x4_interleaved`, every tile: `mac.interleaved_mac_calls`) and a
four-channel window MAC's loop nest its call (`mac.extern_mac_calls`); its other loops stay scalar, a chain of its
constant rescales calls of the biased requantization (`backends.cortex_m.schedules.biased_requantize`), as an element
loop's. An element kernel run too few times per inference to pay for those calls inlined calls their one out-of-line
copy (`cold_requantize`: the bundle's choice, `riscv_bundle_choice`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from math import prod
from typing import Optional

from tvm import s_tir, tirx
from tvm.ir import TensorLoad

from backends.backend import BundleChoice, KernelSchedules
from backends.cortex_m.schedules.biased_requantize import biased_requantize_calls
from backends.cortex_m.schedules.common_tails import common_tails
from backends.cortex_m.schedules.border_window import has_short_rows, window_buffer, windowed_border
from backends.code_price import INSTRUCTIONS_PER_BYTE, KernelCode
from backends.cortex_m.schedules.conv_tiles import conv_tiles_calls, executions
from backends.cortex_m.schedules.depthwise_mac import mac_helper_call
from backends.cortex_m.schedules.depthwise_tiles import depthwise_tiles_calls
from backends.cortex_m.schedules.dsp_add import dsp_add_values
from backends.cortex_m.schedules.fc_rows import fc_rows_calls
from backends.cortex_m.schedules.flat_pixels import flatten_odd_pixel_rows
from backends.cortex_m.schedules.pair_tiles import pair_tiles_calls
from backends.cortex_m.schedules.tiles_16x8 import tiles_16x8_calls
from backends.cortex_m.schedules.pixel_pairs import (TWO_PIXEL_MIN_REDUCTION, pair_odd_pixel_row, pair_tests,
                                                     paired_pixel_body, pays_two_pixels)
from backends.cortex_m.schedules.requantize_epilogue import requantize_epilogue_calls
from backends.cortex_m.schedules.softmax_rows import softmax_s8_rows
from backends.riscv.helpers import FOUR_CHANNELS, MAC_CHANNELS
from backends.riscv.schedules.mac import (BORDER_WINDOW_TAPS, RISCV_CONV_TILES, RISCV_CONV_TILES4, RISCV_CONV_TILES_LUT,
                                          RISCV_DEPTHWISE_TILE_FORMS, RISCV_DOUBLE_EPILOGUE, RISCV_EPILOGUE,
                                          RISCV_FC_ROWS, RISCV_PAIR_TILES, RISCV_PAIR_TILES_ODD, RISCV_PAIR_TILES_W8,
                                          RISCV_TAIL_CHOICES, RISCV_TILES_16X8,
                                          MIN_REDUCTION, depthwise_whole_tile, int8_pairs_pay, interleaved_mac_calls,
                                          mac_replacement, tiled_pair_macs, tiled_pair_tiles, tiled_unrolled_pays,
                                          one_tile_calls,
                                          paired_or_int8_reduction)
from backends.riscv.schedules.add_values_price import add_values_pay
from backends.riscv.schedules.cold_requantize import cold_requantize_kernels, out_of_line_requantize
from backends.riscv.schedules.fc_rows_price import fc_rows_pay, fc_rows_users
from backends.riscv.schedules.live_channels import live_channel_macs
from backends.riscv.schedules.padded_pairs_price import padded_pairs_pay
from backends.riscv.schedules.shared_softmax import shared_softmax_calls, shared_softmax_kernels
from backends.riscv.schedules.tiled_conv_price import tiled_convs_pay
from target.profile import Profile


FOUR_TILE_SAVED_PER_MAC = 2.5
"""The instructions a MAC the four-channel tile saves over one accumulator, at the least (rv32imc: a 3x3
convolution of 12 channels 7.9 -> 4.4 a MAC, a 12-channel depthwise 13.7 -> 9.5, a FULLY_CONNECTED of 12 units
7.0 -> 4.3)."""
FOUR_TILE_CODE_BYTES = 300
"""The code a kernel's four-channel tile adds, at the most (250-300 B measured, TVM's loops of four sums). Charged
per kernel: where the four-channel window MAC and the fused tiles take a kernel's tiles (`<prefix>_mac_s8x4`,
`<prefix>_conv_tiles_s8x4`: one out-of-line copy per bundle, ~440 B together on rv32imc), the kernel's own code is
smaller than its scalar loop nest's and those helpers' bytes are paid once by the bundle's first such kernel, so
this price overstates the one and ignores the other; it still keeps kws_ref_model's small head (below) from
bringing the helpers into a bundle that has no other four-channel kernel."""
FOUR_TILE_MIN_MACS = FOUR_TILE_CODE_BYTES * INSTRUCTIONS_PER_BYTE / FOUR_TILE_SAVED_PER_MAC
"""The fewest MACs (the reduction block's executions) at which a kernel takes the four-channel tile: where it saves
what its code costs at the schedules' one price of code (kws_ref_model's 12-class head of 768 MACs, 2,264 fewer
instructions for 70 more bytes, does not)."""


SUM_TILE_SAVED_PER_STEP = 1.75
"""The instructions per output and reduction step a tile of MAC_CHANNELS channels saves in a reduction without
products (MEAN, SUM, a pool's sums or maxima): its loads and additions are the same, only the loop's pointer step and
branch are shared by the tile (2 a step, less one in eight)."""
SUM_TILE_CODE_BYTES = 350
"""The code such a tile adds to its kernel (rv32imc vit5h_d40_24's MEAN over 36 rows of 40 channels, steps of four
rows: 488 B tiled, ~130 B for each of its scalar MEANs)."""
SUM_TILE_MIN_STEPS = SUM_TILE_CODE_BYTES * INSTRUCTIONS_PER_BYTE / SUM_TILE_SAVED_PER_STEP
"""The fewest executions of such a reduction's block (outputs times steps) at which it is tiled: where the steps saved
pay the tile's code at the schedules' one price of code."""


HELPER_CODE_BYTES = 406
"""The code of the smallest MAC helper's one copy in a bundle, bytes (rv32imc hello_world_int8: `mac_s8x8_pairs`, out
of line, which its two 16-unit layers shared)."""
PLAIN_LOST_PER_MAC = 3.6
"""The instructions an int8 MAC takes more in TVM's loop nest with one accumulator than through the MAC helpers, at
the most (hello_world_int8's 16-unit layer of 256 MACs: 1,247 -> 2,167 instructions; its 16-MAC one 636 -> 372)."""
HELPER_MIN_MACS = int(HELPER_CODE_BYTES * INSTRUCTIONS_PER_BYTE / PLAIN_LOST_PER_MAC)
"""The fewest MACs of one inference at which a quantized model's MAC kernels take the helpers
(`KernelSchedules.helper_min_macs`): below, all its MACs cannot save what one helper's copy costs at the one price of
code."""


FLOAT_TILE_CODE_BYTES = 250
"""The code a float MAC kernel's tile of MAC_CHANNELS accumulators adds on a core without an FPU, at the least (rv32imc
hello_world_float's 16-unit layers: 352 -> 108 B and 392 -> 128 B with one accumulator)."""
FLOAT_UNTILED_LOST_PER_MAC = 8.7
"""The instructions a float MAC takes more with one accumulator than in the tile on such a core, at the most: a
strided 3x3 depthwise convolution's (rv32imc vww_96_float's 3x3x128 one, 10,368 MACs: 1,367,912 -> 1,458,378), where
a FULLY_CONNECTED's lose 2.25 (hello_world_float's 16-unit layers: 4,035 -> 3,976 instructions over 16 MACs, 38,178 ->
38,752 over 256; each MAC is two library calls of some 70 instructions either way)."""
FLOAT_TILE_MIN_MACS = int(FLOAT_TILE_CODE_BYTES * INSTRUCTIONS_PER_BYTE / FLOAT_UNTILED_LOST_PER_MAC)
"""The fewest MACs of one call at which a float MAC kernel takes the tile on a core without an FPU
(`KernelSchedules.float_tile_min_macs`): where the instructions it saves pay its code at the one price of code."""

FPU_FLOAT_TILE_CODE_BYTES = 120
"""The code a float MAC kernel's tile of MAC_CHANNELS accumulators adds on a core with the single-precision FPU, at
the least (rv32imafc hello_world_float's 16-unit layers: 182 -> 62 B over 1 input, 230 -> 76 B over 16, with one
accumulator)."""
FPU_FLOAT_UNTILED_LOST_PER_MAC = 3.5
"""The instructions a float MAC takes more with one accumulator than in the tile on such a core, at the most measured:
rv32imafc hello_world_float's 16-unit layer over 16 inputs, 1,129 -> 2,021 instructions over 256 MACs (over 1 input,
16 MACs, the tile took 267 against 248: its zeroed sums and epilogue cost more than its MACs save)."""
FPU_FLOAT_TILE_MIN_MACS = int(FPU_FLOAT_TILE_CODE_BYTES * INSTRUCTIONS_PER_BYTE / FPU_FLOAT_UNTILED_LOST_PER_MAC)
"""The fewest MACs of one call at which a float MAC kernel takes the tile on a core with the FPU
(`KernelSchedules.float_tile_min_macs`), priced as FLOAT_TILE_MIN_MACS: rv32imafc hello_world_float's code 546 ->
272 B (cortex-m4f 544 B) for 1,562 -> 2,435 instructions."""


UNIT_ROWS_CODE_SAVED = 220
"""The code an SVDF's time product in unit rows (`tvm_ext.kernels.svdf.svdf_output_rows`: one scalar row loop into
one accumulator per unit) saves against the TE compute's tile of eight unrolled sums, at the least (rv32imc
keyword_scrambled: 380 -> ~160 B a kernel, 374 -> ~170 B for rows of 32)."""
UNIT_ROWS_LOST_PER_MAC = 2.4
"""The instructions a time-product MAC the unit rows' scalar loop takes more than the tile, at the most (rv32imc
keyword_scrambled's time products over rows of 32: 5.5 -> 7.9 a MAC with the requantization; rows of 8: 8.8 ->
10.5)."""
UNIT_ROWS_MAX_MACS = int(UNIT_ROWS_CODE_SAVED * INSTRUCTIONS_PER_BYTE / UNIT_ROWS_LOST_PER_MAC)
"""The most time-product MACs of one call at which an SVDF takes the unit rows: where the code saved pays the
instructions lost at the schedules' one price of code (`backends.code_price.INSTRUCTIONS_PER_BYTE`)."""

GATE_LOOP_BYTES = 175
"""The code of one LSTM gate's loop on rv32imc (its two interleaved MAC calls and their pointers, two biased
requantizations, the saturations and the sigmoid's interpolation, gcc -O2 -mtune=size), at the least, which each gate
rolled into one loop with the others of its form saves (`tvm_ext.kernels.lstm.gate_groups`, priced by
`tvm_ext.transform.int8.lstm.rolls_gates`): with the three sigmoid gates in one loop, kws_lstm27_37x11 (seed 71)
code 2,438 -> 2,088 B (cortex-m4f 2,292), kws_lstm_40x16 2,282 -> 1,924 B, the weights 32 B more (each gate's
multipliers in its offsets' rows)."""


class RiscvMacSchedules:
    """The `backends.backend.MacSchedules` of RV32 cores: the window MAC's calls, one or two pixels each; with
    ``fc_rows`` False, a FULLY_CONNECTED layer keeps its own loop over its channel tiles rather than calling the
    shared row helper; with ``cold_requantize``, an element kernel's biased requantizations are calls of their
    out-of-line function (`cold_requantize`); with ``tiled_unrolled`` False, the tiled pair helper's MAC loop is not
    unrolled (`mac.tiled_unrolled_pays`); with ``shared_softmax``, an int8 softmax kernel calls the softmax's one
    out-of-line copy (`shared_softmax`); all four the bundle's choices (`riscv_bundle_choice`)."""

    def __init__(self, fc_rows: bool = True, cold_requantize: bool = False, tiled_unrolled: bool = True,
                 shared_softmax: bool = False) -> None:
        self.fc_rows = fc_rows
        self.cold_requantize = cold_requantize
        self.tiled_unrolled = tiled_unrolled
        self.shared_softmax = shared_softmax

    flat_elements = True
    """An elementwise kernel's loop nest fused into one loop (`tvm_ext.schedule.flat_elements`), for code, not
    speed: rv32imc simple_add_model's 128x128 ADD kernel 152 -> 104 B (the bundle's code 188 -> 148 B, cortex-m4f's
    148) for 362,604 -> 378,201 instructions (an index add per buffer an element where the nest stepped pointers)."""
    helper_call = staticmethod(functools.partial(mac_helper_call, replacement=mac_replacement))
    replacement = staticmethod(mac_replacement)
    window_buffer = staticmethod(window_buffer)
    flatten_odd_pixel_rows = staticmethod(functools.partial(flatten_odd_pixel_rows,
                                                            reduction_of=paired_or_int8_reduction))

    @staticmethod
    def pays_two_pixels(sch, block, loops: list, first_reduce: int) -> bool:
        """The DSP cores' rule (`backends.cortex_m.schedules.pixel_pairs.pays_two_pixels`) for a tile of eight
        channels; never for one of four, whose window MAC has no two-pixel form: paired, its pixels kept TVM's
        scalar loops (densenet_bc_32's 36- and 42-channel 1x1 convolutions on rv32imc, 312 and 490 B). Over tiled
        rows (`tvm_ext.kernels.dense.tile_rows`) from the tiled MAC's shortest window (`mac.MIN_REDUCTION`), where
        the DSP rule asks for 32: each pair is then one call of the out-of-line tiled pair helper, where a lone
        pixel's tiles stay inlined in the kernel (rv32imc vit2h_d30_b1_24x16_tanh_int8's 30-input layers)."""
        if int(sch.get(loops[-1]).extent) == FOUR_CHANNELS:
            return False
        tiled = _reads_tiled_rows(sch.get(block))
        return pays_two_pixels(sch, block, loops, first_reduce, MIN_REDUCTION if tiled else TWO_PIXEL_MIN_REDUCTION)

    pair_odd_pixel_row = staticmethod(functools.partial(pair_odd_pixel_row, widen_inputs=False,
                                                        replacement=mac_replacement))
    paired_pixel_body = staticmethod(functools.partial(paired_pixel_body, widen_inputs=False,
                                                       replacement=mac_replacement))
    pair_tests = staticmethod(pair_tests)
    has_short_rows = staticmethod(has_short_rows)
    windowed_border = staticmethod(functools.partial(windowed_border, replacement=mac_replacement))
    windows_without_interior = True
    """A padded convolution of no interior pixel (a 3x3 window padded by 1 over a 2x2 image) copies every pixel's
    window too (`tvm_ext.schedule.border_split`), where it kept TVM's guarded loops with every MAC inlined: rv32imc
    resnet18_w9_64_int8's three 3x3 kernels of 72 channels over 2x2 (2,308 B each, cortex-m4f's 1,184)."""

    @staticmethod
    def collapses_border(image_dtypes: frozenset[str], window: tuple[int, ...]) -> bool:
        """Whether a depthwise border of any rectangles is one call of the border helper (`RISCV_DEPTHWISE_TILES`:
        int8 images, windows of up to BORDER_WINDOW_TAPS taps, any window): without it a border of more than
        `tvm_ext.schedule.border_split.MAX_REGIONS` rectangles (a 5x5 window padded by 2) kept its per-tap tests,
        each tap a call of the depthwise MAC over one tap and the padding's products inlined."""
        return image_dtypes == {"int8"} and prod(window) <= BORDER_WINDOW_TAPS

    @staticmethod
    def keeps_scalar(sch, block, loops: list, first_reduce: int) -> bool:
        """Whether an integer reduction without products (a MEAN's or SUM's sums, a pool's: no multiply in its
        block, whose tile would share no load) keeps its scalar loop nest, untiled: where its block's executions are
        fewer than SUM_TILE_MIN_STEPS (rv32imc vit5h_d40_24's MEAN over 36 rows of 40 channels, 360 executions:
        5,350 -> 4,413 instructions, the bundle's code 368 B smaller; efficientnet_lite_w030_112_int8,
        tcn_kws_100x32_int8 and vit_tiny_16_int8 -362, -370 and -366 B, a few thousand instructions fewer each)."""
        store = sch.get(block).body
        if not isinstance(store, tirx.BufferStore) or not str(store.buffer.dtype).startswith("int") \
                or not _loads_combined(store.value):
            return False
        return executions(tuple(sch.get(loop) for loop in loops)) < SUM_TILE_MIN_STEPS

    def extern_calls(self, func: tirx.PrimFunc) -> tirx.PrimFunc:
        """An extern stage's int8 MAC loop nests over interleaved weights as calls of
        `<prefix>_dual_mac_s8x4_interleaved`, its four-channel ones as calls of `<prefix>_mac_s8x4`
        (`mac.interleaved_mac_calls`), then a chain of its constant scalar requantizations (at least two: an LSTM's
        gates) as calls of the biased requantization (`biased_requantize`, as the DSP cores' extern stages; rv32imc
        kws_lstm_40x16_int8 2,322 -> 2,292 B of code, 7,076,517 -> 7,068,836 instructions; kws_lstm27_37x11_int8
        2,462 -> 2,452 B, 888,754 -> 886,756); with ``shared_softmax``, its softmax rows as calls of the softmax's
        out-of-line copy (`shared_softmax`)."""
        calls = biased_requantize_calls(interleaved_mac_calls(func), extern_stage=True, least=2)
        return shared_softmax_calls(calls) if self.shared_softmax else calls

    def epilogue_calls(self, func: tirx.PrimFunc) -> tirx.PrimFunc:
        """Each channel tile's "double_small" requantization loop as one call of the epilogue helper, any other
        double rounding's as one call of its own (RISCV_DOUBLE_EPILOGUE); each pixel
        pair's loop over its channel tiles as one call of the fused pair helper (RISCV_PAIR_TILES; its `_odd` form
        for windows of odd rows, RISCV_PAIR_TILES_ODD; its form of int8 weights as stored, RISCV_PAIR_TILES_W8, where
        the kernel's MACs pay it: `mac.int8_pairs_pay`), and each lone or
        border pixel's as one call of its one-pixel form (a LEAKY_RELU convolution's, its requantization then a
        lookup table, the table forms: the pairs' `mac.PAIR_TILES_LUT_OPS`, RISCV_CONV_TILES_LUT; rv32imc
        yolo_tiny_80_int8 code 11,432 -> 7,242 B, 82,710,249 -> 81,132,542 instructions; RISCV_CONV_TILES: in every
        kernel, a 1x1 convolution's
        too; only KxK ones' measured against this, rv32imc code bytes and instructions: kws_ref_model 4,122 ->
        3,972 B, 9,504,829 -> 9,511,768; str_ww_ref_model 2,788 -> 2,650 B, 2,769,259 -> 2,774,894;
        pretrainedResnet_quant 6,694 -> 6,628 B, 34,471,793 -> 34,623,761; person_detect 10,902 -> 10,806 B,
        27,857,590 -> 28,073,045; vww_96_int8 11,224 -> 11,190 B, 30,206,608 -> 30,393,131); each per-tensor fully
        connected layer's loop over its channel tiles as one call of the shared row helper
        (`backends.cortex_m.schedules.fc_rows`, RISCV_FC_ROWS) where ``fc_rows`` (the bundle's choice); each depthwise pixel's loop over its channel tiles
        as one call of the fused depthwise tiles (RISCV_DEPTHWISE_TILES: the interior's and the border's forms;
        rv32imc, the depthwise kernels' instructions: vww_96_int8 7,476,034 -> 7,050,519, kws_ref_model 2,548,939 ->
        2,348,739, str_ww_ref_model 395,217 -> 371,756, with the requantization's folded zero point; bundle code
        vww_96_int8 11,040 -> 8,110 B, kws_ref_model 3,800 -> 3,742 B: each kernel's border loops gone). First, a
        16x8 layer's loop over a pixel's channel tiles as one call of the fused 16x8 tiles' out-of-line copy
        (`tiles_16x8`, RV32's own library of them: `RISCV_TILES_16X8`; its other int16 dual MAC calls, a padded
        convolution's border regions', call that MAC's out-of-line copy from the start: `int16_window_replacement`)."""
        tiles_16x8 = tiles_16x8_calls(func, RISCV_TILES_16X8)
        epilogues = requantize_epilogue_calls(requantize_epilogue_calls(tiles_16x8, helper=RISCV_EPILOGUE,
                                                                        partial_tables=True,
                                                                        partial_stores=True),
                                              helper=RISCV_DOUBLE_EPILOGUE)
        pairs = pair_tiles_calls(pair_tiles_calls(epilogues, RISCV_PAIR_TILES), RISCV_PAIR_TILES_ODD)
        pairs = pair_tiles_calls(pairs, RISCV_PAIR_TILES_W8) if int8_pairs_pay(pairs) else pairs
        pairs = pair_tiles_calls(pairs, tiled_pair_tiles(self.tiled_unrolled))
        tiles = conv_tiles_calls(conv_tiles_calls(pairs, RISCV_CONV_TILES), RISCV_CONV_TILES4)
        tiles = one_tile_calls(conv_tiles_calls(tiles, RISCV_CONV_TILES_LUT))
        for depthwise in RISCV_DEPTHWISE_TILE_FORMS:
            tiles = depthwise_tiles_calls(tiles, depthwise)
        rows = fc_rows_calls(tiles, RISCV_FC_ROWS) if self.fc_rows else tiles
        # a fused chain's rescales (`biased_requantize`; a lone one kept: pretrainedResnet_quant's ADDs 6 B larger)
        live = live_channel_macs(rows)  # a padded tile's two-pixel MACs over its stored channels only
        biased = common_tails(biased_requantize_calls(live, least=2), RISCV_TAIL_CHOICES, through_loops=True)
        return out_of_line_requantize(biased) if self.cold_requantize else biased

    @staticmethod
    def channel_tiles(sch, block) -> tuple[int, ...]:
        """The profile's tile of eight channels, tried first as the core's own so that it may also hold all of a
        kernel's channels (vww's first convolution and its first depthwise one have exactly eight): their sums
        then stay in registers across the window and the window MAC takes the reduction. Then four, for channel
        counts eight does not divide (12, 20, 36: DenseNet's growth, narrow ResNets, detector heads), where the
        kernel's MACs pay its larger code (`FOUR_TILE_MIN_MACS`): four sums in registers in TVM's own loops (no
        helper takes four) rather than one. A 16x8 layer's reduction (int16
        inputs) takes four: the tiles of the int16 dual MAC and the fused 16x8 tiles (`int16_window_replacement`,
        `tiles_16x8`), whose one out-of-line copy every 16x8 kernel calls, where eight sums kept TVM's loops inlined
        in every region of a padded convolution's window (rv32imc resnet8_w15_40x24_16x8: 16,588 B of code against
        cortex-m4f's 13,656). Four is the code rule's choice, not the code price's: eight sums save more instructions
        than their code is worth at 100 a byte on every 16x8 net measured, and break the rule on each (rv32imc, the
        copy's MAC two inputs a step, four -> eight: a resnet of padded 3x3 convolutions 13,611,147 -> 12,919,519
        instructions for 5,946 -> 9,844 B, cortex-m4f 8,276 B; 1x1 and VALID convolutions 8,102,617 -> 7,683,593 for
        1,278 -> 2,110 B, cortex-m4f 1,896 B; unseen tcn_kws_64x24_c33_16x8's 33 channels, eight slower too: 7,326,852
        -> 11,641,938 for 2,722 -> 3,504 B, cortex-m4f 4,092 B), so the tile stays four."""
        if _reduces_16x8(sch.get(block)):
            return (FOUR_CHANNELS,)
        whole = depthwise_whole_tile(sch, block)
        if whole is not None:  # a depthwise layer whose channels eight does not divide: one tile of them all
            return (whole,)
        macs = executions(tuple(sch.get(loop) for loop in sch.get_loops(block)))
        return (MAC_CHANNELS, FOUR_CHANNELS) if macs >= FOUR_TILE_MIN_MACS else (MAC_CHANNELS,)


def _reduces_16x8(block: s_tir.SBlock) -> bool:
    """Whether ``block`` is a 16x8 CONV_2D's or FULLY_CONNECTED's reduction: into int32 sums, it reads int16 inputs
    (a padded window's through its guard too) and int8 weights of several output channels (a depthwise layer's [1,
    KH, KW, C] weights have one)."""
    store = block.body
    if not isinstance(store, tirx.BufferStore) or str(store.buffer.dtype) != "int32":
        return False
    reads = [region.source for region in block.reads]
    return any(str(buffer.dtype) == "int16" for buffer in reads) and any(
        str(buffer.dtype) == "int8" and len(buffer.shape) in (2, 4) and isinstance(buffer.shape[0], tirx.IntImm)
        and int(buffer.shape[0]) > 1 for buffer in reads)


def _reads_tiled_rows(block: s_tir.SBlock) -> bool:
    """Whether ``block`` is a FULLY_CONNECTED's reduction over tiled rows (`tvm_ext.kernels.dense.tile_rows`): it reads
    int8 rows [N, K] and int8 weights [O / 8, K, 8] (a depthwise layer's [KH, KW, 8] weights come with NHWC inputs)."""
    shapes = [region.source.shape for region in block.reads if str(region.source.dtype) == "int8"]
    rows = any(len(shape) == 2 for shape in shapes)
    return rows and any(len(shape) == 3 and isinstance(shape[2], tirx.IntImm) and int(shape[2]) == MAC_CHANNELS
                        for shape in shapes)


def _loads_combined(value: tirx.PrimExpr) -> bool:
    """Whether ``value`` only adds, subtracts, takes the maximum or minimum of and casts loads (whatever their
    indices) and constants: a reduction step without products."""
    if isinstance(value, (TensorLoad, tirx.IntImm)):
        return True
    if isinstance(value, tirx.Cast):
        return _loads_combined(value.value)
    if isinstance(value, (tirx.Add, tirx.Sub, tirx.Max, tirx.Min)):
        return _loads_combined(value.a) and _loads_combined(value.b)
    return False


RISCV_MAC_SCHEDULES = RiscvMacSchedules()


def riscv_bundle_choice(kernels: Mapping[str, tirx.PrimFunc], calls: Mapping[str, int]) -> Optional[BundleChoice]:
    """The `KernelSchedules.bundle_choice` of RV32 cores: from the bundle's kernels (scheduled with the shared
    FULLY_CONNECTED row helper's calls and inlined biased requantizations) and their calls, where that helper's one
    copy does not pay (`fc_rows_price.fc_rows_pay`), its calling kernels scheduled with their own loops; the kernels
    whose biased requantizations pay out of line (`cold_requantize.cold_requantize_kernels`) scheduled with their
    calls; where the tiled pair helper's unrolled loop does not pay (`mac.tiled_unrolled_pays`), its calling kernels
    passing the plain loop's form; the softmax kernels that call the softmax's one out-of-line copy
    (`shared_softmax.shared_softmax_kernels`); None where none changes a kernel."""
    own_loops = set() if fc_rows_pay(kernels, calls) else set(fc_rows_users(kernels))
    cold = set(cold_requantize_kernels(kernels, calls))
    tiled = {name: tiled_pair_macs(func) * calls.get(name, 1) for name, func in kernels.items()}
    plain = set() if tiled_unrolled_pays(sum(tiled.values())) else {name for name, macs in tiled.items() if macs}
    softmax = set(shared_softmax_kernels(kernels, calls))
    chosen = own_loops | cold | plain | softmax
    if not chosen:
        return None
    return BundleChoice({name: RiscvMacSchedules(fc_rows=name not in own_loops, cold_requantize=name in cold,
                                                 tiled_unrolled=name not in plain, shared_softmax=name in softmax)
                         for name in kernels if name in chosen})


RV32C_KERNEL_CODE = KernelCode(bytes_per_node=3, registers=36)
"""RV32IMC's estimate of a kernel's code (`tvm_ext.transform.share_constant_variants.kernel_bytes`): 3 B a node, where
Thumb-2's 2 (`backends.code_price.THUMB2_KERNEL_CODE`) fell short of what gcc -Os builds for rv32imc by a third and
more: measured against nm sizes, the ViT layer norms (add_rsqrt_mul_mul_mul_sub_add, 150-162 nodes, 8-10
requantizations of 32x32 -> 64-bit products by MULH and MUL) 538-620 B where 2 B a node gave 328-352 B (3 B: 478-514),
vit_tiny_16_int8's, vit2h_d30_b1_24x16_tanh_int8's and vit3h_d36_b2_20_int8's; elementwise ADDs 142-180 B (80-106
at 2 B, 106-142 at 3 B), transposes 64-92 B (50, 71), means 114-150 B (84-182, 114-257). A shared kernel's
constants loaded once at its entry where a loop holds at most 36 values (`constants_across_loops`; 27 registers,
x1 and x5-x31 less s0, a frame pointer, and the estimate's counters and pointers gcc folds or reloads; measured:
at 33, unseen vit2h_d22_b2_24x20_int8's layer norms, 23 constants, at entry 49,155 instructions fewer for 70 B
more; at 42, kws_gru_40x16_int8's gate chain, 33 constants, where used 84 B less for 1,365 instructions more):
rv32imc vit_tiny_16_int8's three layer norms share one kernel (the group's loads per call 15, where each element
reloaded them: 221 instructions per byte saved), code 1,634 -> 652 B for 769,707 -> 884,815
instructions (117 a byte: the estimate counts the loads, not the values then held in registers)."""


def kernel_schedules(profile: Profile) -> KernelSchedules:
    """The schedules of an RV32 core: MAC_CHANNELS (8) accumulators per integer MAC kernel (31 registers hold
    eight sums, the pointers and the loop counter), also of one with exactly eight output channels
    (`RiscvMacSchedules.channel_tiles`), no float tiles, the window MAC's calls, and FULLY_CONNECTED weights
    paired two channels to a word (`backends.riscv.schedules.mac.paired_mac_replacement`: one multiply per two
    products), and int8 SOFTMAX as one call per row of the DSP cores' row helper
    (`backends.cortex_m.schedules.softmax_rows`: 32-bit C whose DSP words are guarded by __ARM_FEATURE_DSP; TVM's
    generic kernel's 64-bit fixed-point steps took 1,008 B of code in kws_ref_model's 12-class head on rv32imc).
    int8 ADD and SUB from their operands' doubled values tabled at compile time are the DSP cores' kernel
    (`KernelSchedules.int8_add_values`, `backends.cortex_m.schedules.dsp_add`: its output stage's portable C, eight
    instructions from the sum to the shifted value where the generic kernel's rescale and zero point took ten; the
    same 1 KB table the generic kernel reads): rv32imc simple_add_model 395,359 -> 362,604 instructions (loop nest
    kept), pretrainedResnet_quant, mobilenet_v2_050_64_int8, efficientnet_lite_w030_112_int8 and vit_tiny_16_int8
    fewer instructions and less code
    with the flat loops (`RiscvMacSchedules.flat_elements`).
    A CONV_2D's output channels that four does not divide are padded to whole tiles of four
    (`KernelSchedules.dense_unit_tile`, FOUR_CHANNELS: the four- or eight-channel tile's window MAC then takes them,
    not the scalar loop nest in each of a padded convolution's border regions: yolo_tiny_64_odd's 6- and 10-channel
    3x3 convolutions on rv32imc 1,746 and 1,820 -> 1,398 and 764 B, the bundle 10,812 -> 9,486 B and 23,542,529 ->
    18,483,237 instructions; densenet_bc_32's 42-channel 1x1 one 6,636,432 -> 3,359,964), those of more than one
    output pixel; a FULLY_CONNECTED's of one row are not (no `one_row_padding_pays`:
    kws_gru24_31x13's 5-unit and densenet_bc_32's 10-class heads, below the four-channel tile's MACs, ran their
    padded channels in the scalar loop, and that bundle's gate layers took 4 % more instructions).
    An SVDF's time product and requantization, int8 or int16 state, of at most UNIT_ROWS_MAX_MACS MACs a call is
    one extern stage unit after unit (`svdf_unit_rows`: `tvm_ext.kernels.svdf.svdf_output_rows`), each unit's row
    one scalar loop into one accumulator, where the TE compute's eight-unit tile unrolled eight sums per kernel
    (~370 B against ~150 B): rv32imc keyword_scrambled code 3,708 -> 3,242 B (cortex-m4f 3,244) for 144,686 ->
    155,888 instructions, keyword_scrambled_8bit 3,350 -> 2,886 B (cortex-m4f 3,128) for 145,237 -> 156,440 (~24
    instructions a byte, below the one price of code).
    An LSTM's gate products and an SVDF's feature product take their weights interleaved per tile of four units
    (`interleaved_gate_weights`, padded to whole tiles and groups of four by zero weights), each product one call of
    the interleaved MAC over every tile, where the row-major weights' products took a loop of tiles in the kernel,
    each copying its offsets and calling the four-channel MAC: smaller and faster on every such shared model
    (`templates/mac_s8x4_interleaved.h.in` has the figures); an input or unit count not whole groups pays zero
    weights in flash (kws_lstm32_61x13's 13 inputs: 384 B for 246 B of code and 27 % of the instructions).
    A CONV_2D whose output channels are so padded to whole tiles of eight takes its OHWI weights tiled
    (`tiled_rows`, its window one row) where the one out-of-line tiled window MAC pays over the kernels' inlined
    ones (`tiled_conv_price.tiled_convs_pay`): rv32imc yolo_tiny_80x48_w11 code 10,662 -> 8,056 B, 33,345,809 ->
    33,330,449 instructions.
    A CONV_2D whose channels the tiles of four would end in one that eight does not cover (9-12, 17-20, 33-36 ...)
    pads them to whole tiles of eight and takes paired weights instead, where its MACs pay its larger code
    (`padded_pairs_price.padded_pairs_pay`): two products a MUL where the four-channel MAC took one (rv32imc
    resnet18_w9, 3x3 convolutions of 9, 18 and 36 channels: 53,582,188 -> 46,904,714 instructions, code 10,636 ->
    12,554 B, cortex-m4f 13,132 B; se_resnet_odd, 26 channels: 10,720,585 -> 9,885,576).
    The bundle's per-tensor FULLY_CONNECTED layers call the shared row helper only where its one copy pays
    (`riscv_bundle_choice`, `fc_rows_price`), else each keeps its own loop over its channel tiles.
    A quantized model of fewer than HELPER_MIN_MACS MACs keeps TVM's loop nests, no helper (rv32imc hello_world_int8:
    code 918 -> 412 B, weights 660 -> 388 B without paired weights, 2,057 -> 2,713 instructions).
    On a core without an FPU a float MAC kernel of fewer than FLOAT_TILE_MIN_MACS MACs a call keeps one accumulator
    (rv32imc hello_world_float: code 746 -> 350 B, 44,888 -> 45,403 instructions), on one with it, of fewer than
    FPU_FLOAT_TILE_MIN_MACS (rv32imafc hello_world_float: 546 -> 272 B, 1,562 -> 2,435)."""
    return KernelSchedules(output_channel_tile=MAC_CHANNELS, float_channel_tiles=(), mac=RISCV_MAC_SCHEDULES,
                           dense_unit_tile=FOUR_CHANNELS, paired_weights=True, padded_pairs_pay=padded_pairs_pay,
                           tiled_rows=True,
                           tiled_convs_pay=tiled_convs_pay,
                           int8_softmax=softmax_s8_rows, int8_add_values=dsp_add_values,
                           int8_add_values_pays=add_values_pay,
                           svdf_unit_rows=("int8", "int16"),
                           svdf_unit_rows_max_macs=UNIT_ROWS_MAX_MACS, interleaved_gate_weights=True,
                           gate_loop_bytes=GATE_LOOP_BYTES,
                           bundle_choice=riscv_bundle_choice, kernel_code=RV32C_KERNEL_CODE,
                           helper_min_macs=HELPER_MIN_MACS,
                           float_tile_min_macs=FPU_FLOAT_TILE_MIN_MACS if profile.hardware_float else FLOAT_TILE_MIN_MACS)
