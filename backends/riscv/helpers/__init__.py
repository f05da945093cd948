"""The RISC-V backend's C helpers, `static inline` in `<model>_internal.h` when a kernel calls one (no TVM).

Each is hand-written C in `templates/` (a `.h.in` whose `${prefix}` is the bundle's prefix; its contract in its
leading comment, which bundles do not copy), after `riscv_common.h.in` (their always-inline attribute and their
compiler barriers, each a named macro guarded for GCC/Clang, with why they are there), with a C unit test under
`tests/c/`, run on the host and under QEMU virt (`tests/backends/riscv/test_riscv_helpers_c.py`):

- `mac_s8x8.h.in`: `<prefix>_mac_s8x8`, the int8 window MAC of eight output channels (register tiling for
  RV32's 31 registers), called by CONV_2D and FULLY_CONNECTED kernels (`backends.riscv.schedules.mac`), and
  `<prefix>_mac_s8x4`, the same of four channels (a kernel's four-channel tile; one out-of-line copy per bundle);
- `mac_s8x8_pairs.h.in`: `<prefix>_mac_s8x8_pairs`, the same sums over weights packed two channels to an int32
  word at compile time (`tvm_ext.kernels.dense.pair_weights`), one multiply per two products, called by
  FULLY_CONNECTED and CONV_2D kernels (one out-of-line copy per bundle, the others inlined where called), and `<prefix>_mac_s8x2x8_pairs`, the same for two output pixels,
  each word loaded feeding both (`_rows` forms of both for a window's rows apart, every KxK convolution's calls:
  one out-of-line copy each per bundle too);
- `mac_s8x2x8_row.h.in`: `<prefix>_mac_s8x2x8_row`, the same for two output pixels, each weight loaded feeding
  both, all sixteen sums in registers, for one-row windows (1x1 convolutions), and `<prefix>_mac_s8x2xn_row`, its
  form over the first 1..8 channels (a tile padded to eight: `backends.riscv.schedules.live_channels`);
- `mac_s8x2x8.h.in`: `<prefix>_mac_s8x2x8`, the same sums for windows of several rows, one row helper's call
  per row, and `<prefix>_mac_s8x2xn`, its form over the first 1..8 channels;
- `depthwise_mac_s8x8.h.in`: `<prefix>_depthwise_mac_s8x8`, the int8 depthwise window MAC of eight channels, and
  `<prefix>_depthwise_pad_s8x8`, a padded border's taps outside the image (the zero point times the weights), one
  out-of-line copy each per bundle, called by every DEPTHWISE_CONV_2D kernel;
- `depthwise_tiles_s8x8.h.in`: `<prefix>_depthwise_tiles_s8x8` (`_b16` for int16 biases), every channel tile of a
  depthwise kernel's interior pixel in one call of one out-of-line copy per bundle (each tile's eight sums from the
  biases in registers, the depthwise MAC's taps, the per-channel requantization), called by every such pixel
  (`backends.cortex_m.schedules.depthwise_tiles`; unit test `tests/c/test_riscv_depthwise_tiles.c`);
- `requantize_small.h.in`: `<prefix>_requantize_small_s8` (`_s8_b16` for int16 biases), a MAC kernel's
  requantization epilogue of one channel tile (TFLite's double rounding on its "double_small" domain), one
  out-of-line copy per bundle for both bias types, with the contract, names and unit test
  (`tests/c/test_requantize_small.c`) of the Cortex-M DSP epilogue it stands for; and
  `<prefix>_requantize_s8` (`_b16`), the same for TFLite's double rounding of any sum and shift (the layers
  whose constants or sums the small one does not take), with the contract, names and unit test
  (`tests/c/test_requantize_s8.c`) of the Helium epilogue;
- `fc_rows_s8x8.h.in`: `<prefix>_fc_rows_s8x8` (`_b16` for int16 biases), every channel of a per-tensor int8 fully
  connected layer in one call of one out-of-line copy per bundle (each tile's sums from the biases, the paired
  MAC's loop, the requantization by the layer's one multiplier and shift), called by every such layer's kernel
  (`backends.cortex_m.schedules.fc_rows`; unit test `tests/c/test_riscv_fc_rows.c`);
- `pair_tiles_s8x8.h.in`: `<prefix>_pair_tiles_s8x8` (`_b16` for int16 biases), every channel tile of a
  convolution's pixel pair in one call of one out-of-line copy per bundle (each tile's sixteen sums from the
  biases, the two-pixel paired MAC's window loops, the per-channel requantization), called by every such pair
  (`backends.cortex_m.schedules.pair_tiles`; `_odd` forms for windows of odd rows, `_w8` forms for int8 weights as
  stored), and `<prefix>_conv_tiles_s8x8`
  (`_b16`), the same for one pixel
  (`backends.cortex_m.schedules.conv_tiles`; unit test of both `tests/c/test_riscv_pair_tiles.c`);
- `mac_s8x8_tiled.h.in`: `<prefix>_mac_s8x8_tiled` and `<prefix>_mac_s8x2x8_tiled`, the int8 MAC of one or two
  pixels over tiled rows (`tvm_ext.kernels.dense.tile_rows`: a tile's eight weights of an input at constant
  offsets), and `<prefix>_pair_tiles_tiled_s8x8` (`_b16`), every channel tile of a pixel pair over them in one call of
  one out-of-line copy per bundle, called by every FULLY_CONNECTED kernel of several rows (`tiled_pair_tiles`;
  unit test `tests/c/test_riscv_pair_tiles.c`: `tiled_rows_cases`); and `<prefix>_mac_s8x8_tiled_rows` and
  `<prefix>_mac_s8x2x8_tiled_rows`, the MAC of one or two pixels over a window's rows of a CONV_2D's tiled OHWI
  weights, one out-of-line copy each per bundle (`tiled_mac_replacement`; `tiled_window_cases`);
- `mac_s8x4_interleaved.h.in`: `<prefix>_dual_mac_s8x4_interleaved`, the MAC over weights interleaved per tile of
  four units (`tvm_ext.kernels.extern_mac.interleave_weights`), every tile of an LSTM gate's or an SVDF's feature
  product in one call (`backends.riscv.schedules.mac.interleaved_mac_calls`), with the contract, name and unit test
  (`tests/c/test_dual_mac_interleaved.c`) of the Cortex-M DSP helper it stands for; its own library
  (`INTERLEAVED_MAC_HELPERS`), defined only in a bundle that calls it;
- `requantize_biased_call.h.in`: `<prefix>_requantize_biased_s8_call`, the element loops' biased requantization
  saturated to int8 (`backends.cortex_m.schedules.biased_requantize`) as one out-of-line function, called by the
  kernels run too few times per inference to pay for its inlined copies (`backends.riscv.schedules.cold_requantize`;
  unit test `tests/c/test_requantize_biased.c`); its own library (`REQUANTIZE_BIASED_CALL_HELPERS`);
- `softmax_s8_shared.h.in`: `<prefix>_softmax_s8_shared`, the DSP cores' int8 softmax over rows
  (`backends.cortex_m.helpers.softmax_c`) as one out-of-line function, called by the softmax kernels of a bundle
  whose several such kernels pay for sharing it (`backends.riscv.schedules.shared_softmax`; unit test
  `tests/c/test_softmax_s8.c`); its own library (`SOFTMAX_SHARED_HELPERS`).
"""

from __future__ import annotations

from backends.backend import HelperLibrary
from backends.riscv.family import RISCV_FAMILY
from backends.bias_forms import bias_form
from backends.cortex_m.helpers.requantize_biased_c import REQUANTIZE_BIASED_HELPERS
from backends.cortex_m.helpers.requantize_small_c import requantize_small_helper_name
from backends.cortex_m.helpers.tiles_16x8_c import tiles_16x8_c
from packager.fixed_point_c import REQUANTIZE_16X8
from backends.cortex_m.helpers.softmax_c import SOFTMAX_HELPERS
from packager.template_files import helper_template_c

MAC_CHANNELS = 8
"""Output channels per call of the MAC helper: eight sums, the pointers, the loop bound and four inputs stay in
RV32's 31 registers (the kernels' accumulator tile, `backends.riscv.schedules`)."""
FOUR_CHANNELS = 4
"""Output channels per call of the four-channel MAC helper (`<prefix>_mac_s8x4`: the kernels' four-channel tile)."""
COMMON_TEMPLATE = "riscv_common.h.in"
"""The always-inline attribute and the compiler barriers every helper below uses (GCC/Clang-guarded)."""
MAC_TEMPLATE = "mac_s8x8.h.in"
MAC_PAIRS_TEMPLATE = "mac_s8x8_pairs.h.in"
MAC_2PX_ROW_TEMPLATE = "mac_s8x2x8_row.h.in"
MAC_2PX_TEMPLATE = "mac_s8x2x8.h.in"
DEPTHWISE_MAC_TEMPLATE = "depthwise_mac_s8x8.h.in"
REQUANTIZE_TEMPLATE = "requantize_small.h.in"
DEPTHWISE_TILES_TEMPLATE = "depthwise_tiles_s8x8.h.in"
FC_ROWS_TEMPLATE = "fc_rows_s8x8.h.in"
FC_ROWS_FORM = "s8x8"
"""How the fused row helper reads its weights, in its name (``helium_c.fc_rows_helper_name``)."""
PAIR_TILES_TEMPLATE = "pair_tiles_s8x8.h.in"
MAC_TILED_TEMPLATE = "mac_s8x8_tiled.h.in"
RISCV_HELPER_TEMPLATES = (COMMON_TEMPLATE, MAC_TEMPLATE, MAC_PAIRS_TEMPLATE, MAC_2PX_ROW_TEMPLATE, MAC_2PX_TEMPLATE,
                          DEPTHWISE_MAC_TEMPLATE, REQUANTIZE_TEMPLATE, DEPTHWISE_TILES_TEMPLATE, FC_ROWS_TEMPLATE,
                          PAIR_TILES_TEMPLATE, MAC_TILED_TEMPLATE)
"""The helpers' templates in the order a bundle defines them."""


def mac_helper_name(prefix: str) -> str:
    """The C name of the int8 MAC helper in the bundle `prefix`."""
    return f"{prefix}_mac_s8x8"


def mac4_helper_name(prefix: str) -> str:
    """The C name of the four-channel int8 MAC helper in the bundle `prefix` (one out-of-line copy)."""
    return f"{prefix}_mac_s8x4"


def mac_pairs_helper_name(prefix: str, rows: bool = False) -> str:
    """The C name of the int8 MAC helper of paired weights in the bundle `prefix` (its form over window rows if
    `rows`)."""
    return f"{prefix}_mac_s8x8_pairs_rows" if rows else f"{prefix}_mac_s8x8_pairs"


def mac_pairs_2px_helper_name(prefix: str, rows: bool = False) -> str:
    """The C name of the two-pixel int8 MAC helper of paired weights in the bundle `prefix` (its form over window
    rows if `rows`)."""
    return f"{prefix}_mac_s8x2x8_pairs_rows" if rows else f"{prefix}_mac_s8x2x8_pairs"


def mac_2px_helper_name(prefix: str) -> str:
    """The C name of the two-pixel int8 MAC helper in the bundle `prefix`."""
    return f"{prefix}_mac_s8x2x8"


def mac_2px_n_helper_name(prefix: str, row: bool = False) -> str:
    """The C name of the two-pixel int8 MAC helper of fewer than eight live channels (its last argument) in the
    bundle `prefix`; with `row`, its form for one-row windows."""
    return f"{prefix}_mac_s8x2xn{'_row' if row else ''}"


def mac_2px_row_helper_name(prefix: str) -> str:
    """The C name of the two-pixel int8 MAC helper of one-row windows in the bundle `prefix`."""
    return f"{prefix}_mac_s8x2x8_row"


def mac_tiled_helper_name(prefix: str, pixels: int = 1, rows: bool = False) -> str:
    """The C name of the int8 MAC helper over tiled rows (`tvm_ext.kernels.dense.tile_rows`) in the bundle `prefix`,
    of one output pixel or two (`pixels`); with `rows`, its form over a window's rows apart (a CONV_2D's)."""
    return f"{prefix}_mac_s8{'x2' if pixels == 2 else ''}x8_tiled{'_rows' if rows else ''}"


def depthwise_mac_helper_name(prefix: str, sized: bool = False) -> str:
    """The C name of the int8 depthwise MAC helper in the bundle `prefix` (one out-of-line copy); with `sized`, its
    form of any channel count (an argument)."""
    return f"{prefix}_depthwise_mac_s8xn" if sized else f"{prefix}_depthwise_mac_s8x8"


def depthwise_pad_helper_name(prefix: str, sized: bool = False) -> str:
    """The C name of the depthwise padding helper in the bundle `prefix` (a padded border's taps outside the
    image: the zero point times the weights); with `sized`, its form of any channel count (an argument)."""
    return f"{prefix}_depthwise_pad_s8xn" if sized else f"{prefix}_depthwise_pad_s8x8"


def depthwise_tiles_helper_name(prefix: str, bias: str, border: bool = False, table: bool = False) -> str:
    """The C name of the fused depthwise channel tiles helper for biases of type `bias` ("int32" or "int16") in the
    bundle `prefix` (one out-of-line copy); with `border`, its form of a padded border pixel's window; with `table`,
    its form with a lookup table after the requantization."""
    return bias_form(f"{prefix}_depthwise_{'border' if border else 'tiles'}{'_lut' if table else ''}_s8x8", bias)


def requantize_helper_name(prefix: str, bias: str, table: bool = False) -> str:
    """The C name of the requantization epilogue for biases of type `bias` ("int32" or "int16") in the bundle
    `prefix` (with `table`, its form with a lookup table after it): the Cortex-M DSP epilogue's names
    (`requantize_small_helper_name`)."""
    return requantize_small_helper_name(prefix, bias, table)


def pair_tiles_helper_name(prefix: str, bias: str, any_double: bool = False, odd: bool = False,
                           int8_weights: bool = False, table: bool = False, tiled: bool = False,
                           part: bool = False) -> str:
    """The C name of the fused pixel-pair channel tiles helper for biases of type `bias` ("int32" or "int16") in
    the bundle `prefix`; with `any_double`, its form of TFLite's double rounding for any sum and shift; with `odd`,
    its form of windows whose rows may be of odd length; with `int8_weights`, its form of int8 weights as stored
    (not paired); with `table`, its form with a lookup table after the requantization; with `tiled`, its form of
    tiled rows (`tvm_ext.kernels.dense.tile_rows`), with `part` too, of a last tile storing fewer channels."""
    name = f"{prefix}_pair_tiles{'_double' if any_double else ''}{'_lut' if table else ''}{'_odd' if odd else ''}" \
           f"{'_w8' if int8_weights else ''}{'_tiled' if tiled else ''}{'_part' if part else ''}_s8x8"
    return bias_form(name, bias)


def conv_tiles_helper_name(prefix: str, bias: str, table: bool = False) -> str:
    """The C name of the fused one-pixel channel tiles helper for biases of type `bias` ("int32" or "int16") in
    the bundle `prefix`; with `table`, its form with a lookup table after the requantization."""
    return bias_form(f"{prefix}_conv_tiles{'_lut' if table else ''}_s8x8", bias)


def conv_tiles4_helper_name(prefix: str, bias: str) -> str:
    """The C name of the fused one-pixel four-channel tiles helper for biases of type `bias` ("int32" or "int16")
    in the bundle `prefix`."""
    return bias_form(f"{prefix}_conv_tiles_s8x4", bias)


def riscv_helpers_c(prefix: str) -> str:
    """Every RISC-V helper's C definition for the bundle `prefix`."""
    return "".join(helper_template_c(__package__, name, prefix) for name in RISCV_HELPER_TEMPLATES)


RISCV_HELPERS = HelperLibrary("riscv", riscv_helpers_c, family=RISCV_FAMILY)

RISCV_TILES_16X8_HELPERS = HelperLibrary("riscv_tiles_16x8", tiles_16x8_c, (), (REQUANTIZE_16X8,), family=RISCV_FAMILY)
"""The fused 16x8 channel tiles and the int16 dual MAC's out-of-line copy on RV32 (`tiles_16x8_c`: the Cortex-M
template, whose portable branch sums with a loop of its own): a library of its own that needs no other, where the
Cortex-M cores' TILES_16X8_HELPERS needs CORTEX_M_HELPERS for the dual MAC of DSP cores. A bundle that also calls
RISCV_HELPERS (a 16x8 depthwise layer's padding helper) cannot define CORTEX_M_HELPERS beside it: the two libraries
define the requantization epilogue under the same names with different contracts (an unseen 16x8 DS-CNN on rv32imc
did not build: conflicting types for `<prefix>_requantize_small_lane`)."""

INTERLEAVED_MAC_TEMPLATE = "mac_s8x4_interleaved.h.in"


def interleaved_mac_c(prefix: str) -> str:
    """The interleaved MAC's C definition for the bundle `prefix`."""
    return helper_template_c(__package__, INTERLEAVED_MAC_TEMPLATE, prefix)


INTERLEAVED_MAC_HELPERS = HelperLibrary("riscv_interleaved_mac", interleaved_mac_c, family=RISCV_FAMILY)
"""Its own library: only a bundle whose kernels call the interleaved MAC defines it (every other bundle's
`<model>_internal.h` stays as it was)."""


REQUANTIZE_BIASED_CALL_TEMPLATE = "requantize_biased_call.h.in"


def requantize_biased_call_c(prefix: str) -> str:
    """The out-of-line biased requantization's C definition for the bundle `prefix` (after the inlined form's)."""
    return helper_template_c(__package__, REQUANTIZE_BIASED_CALL_TEMPLATE, prefix)


def requantize_biased_call_name(prefix: str) -> str:
    """The C name of the out-of-line biased requantization saturated to int8 in the bundle `prefix`."""
    return f"{prefix}_requantize_biased_s8_call"


REQUANTIZE_BIASED_CALL_HELPERS = HelperLibrary("riscv_requantize_biased_call", requantize_biased_call_c,
                                               needs=(REQUANTIZE_BIASED_HELPERS,), family=RISCV_FAMILY)
"""Its own library: only a bundle whose kernels call it defines it (after the inlined form it calls)."""


SOFTMAX_SHARED_TEMPLATE = "softmax_s8_shared.h.in"


def softmax_shared_c(prefix: str) -> str:
    """The out-of-line int8 softmax's C definition for the bundle `prefix` (after the inlined form's)."""
    return helper_template_c(__package__, SOFTMAX_SHARED_TEMPLATE, prefix)


def softmax_shared_name(prefix: str) -> str:
    """The C name of the out-of-line int8 softmax over rows in the bundle `prefix`."""
    return f"{prefix}_softmax_s8_shared"


SOFTMAX_SHARED_HELPERS = HelperLibrary("riscv_softmax_shared", softmax_shared_c, needs=(SOFTMAX_HELPERS,),
                                       family=RISCV_FAMILY)
"""Its own library: only a bundle whose kernels call it defines it (after the inlined form it calls)."""
