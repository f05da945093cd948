"""The Helium (Armv8.1-M MVE) bodies of the Cortex-M helpers: TFLite Micro's per-target override, where a kernel
keeps its reference signature and the target swaps its body. Each template defines the helpers of the DSP
template it replaces, under the same names, arguments and contracts, so the kernels scheduled for a DSP core
call them unchanged; a Helium core's bundle (`backends.cortex_m.helpers.HELIUM_HELPERS`, chosen by the profile's
`simd = "mve"`) defines these in place of the DSP ones, after `helium_lanes.h.in` (<arm_mve.h>, <PREFIX>_HELIUM):

- `helium_dual_mac.h.in`: `<prefix>_dual_mac_s8x4`, `_s16x4` and `_s8x2x4` as 16 int8 (8 int16) lanes per
  vector load and one VMLADAVA per channel, a row's last lanes one VCTP-predicated vector (no scalar tail);
- `helium_row_dot.h.in`: `<prefix>_row_dot_s8x4` the same way;
- `helium_depthwise_mac.h.in`: the depthwise helpers with a tap's four channels as the lanes of one vector;
  MVE only, so the bundle keeps `depthwise_mac.h.in` for a build without MVE, the compiler choosing;
- `helium_requantize.h.in`: `<prefix>_requantize_s8` and `_s8_b16`, a MAC kernel's int8 requantization
  epilogue four outputs per vector (VQRDMULH, VRSHL, VMAX/VMIN, VSTRB.32), in place of the scalar loop the
  Helium schedules replace (`backends.cortex_m.schedules.requantize_epilogue`), and `_s8_lut` (`_s8_lut_b16`) with
  a lookup table after it (a byte gather, VLDRB.S32); no DSP twin, its portable C the same steps lane by lane;
- `helium_depthwise16.h.in`: `<prefix>_depthwise_mac_s8x16`, `_box_s8x16` and `_pad_s8x16`, an int8 depthwise
  reduction over a tile of up to 16 channels (two halves of eight int16 lanes, VMULLB/VMULLT, VCTP tails) and
  a border pixel's padding products, called by Helium's own depthwise schedule
  (`backends.cortex_m.schedules.helium_depthwise`); no DSP twin, its portable C the same sums; and
  `<prefix>_depthwise_tiles_s8` and `_depthwise_border_s8` (`_b16`: int16 biases; `_border3x3_s8`: a 3x3
  window's, out of line), every channel tile of one depthwise output pixel (interior, or border: its window's
  taps inside the image copied among the padding's) with the requantization fused, the accumulators starting at
  the biases in registers (`backends.cortex_m.schedules.depthwise_tiles`);
- `helium_conv_tiles.h.in`: `<prefix>_conv_tiles_s8` (`_s8_b16`: int16 biases), every channel tile of one output pixel of an int8
  convolution or fully connected layer in one call: the dual MAC and the requantization
  epilogue above fused, each tile's accumulators starting at its biases and never stored
  (`backends.cortex_m.schedules.conv_tiles`); no DSP twin, its portable C those two helpers; its one out-of-line
  copy per bundle `_conv_tiles_shared_s8` (`_b16`) and `<PREFIX>_CHOOSE`, the call and the address an interior
  and a border pixel share (`backends.cortex_m.schedules.common_tails`); and `<prefix>_pair_tiles_shared_s8`
  (`_b16`), a pixel pair's channel tiles (the two-pixel dual MAC and the epilogue) in one out-of-line copy per
  bundle (`backends.cortex_m.schedules.pair_tiles`, HELIUM_PAIR_TILES);
- `helium_fc_rows.h.in`: `<prefix>_fc_rows_s8` (`_s8_b16`: int16 biases), every channel of a per-tensor int8
  fully connected layer in one call of one out-of-line copy per bundle: each four-channel tile's dual MAC from the
  biases and its vector requantization by the layer's one multiplier and shift
  (`backends.cortex_m.schedules.fc_rows`); its DSP twin over stacked weights is `fc_tiles_s8x4.h.in`'s
  `<prefix>_fc_rows_s8x4` (`backends.cortex_m.schedules.fc_tiles`), its portable C the dual MAC's and the
  requantization's lane by lane;
- `helium_add.h.in`: `<prefix>_add_s8_tables` and `<prefix>_add_s8`, TFLite's int8 ADD of two operands of one
  shape: an operand's 256 rescaled values tabled once (none for the operand of multiplier 1/2), then four outputs
  per step (VLDRW gathers, VMLA, VQRDMLAH, VRSHL) over runs of the elements, called by
  the ADD kernel Helium's lowering writes (`backends.cortex_m.schedules.helium_add`); no DSP twin, its portable
  C the same sums element by element;
- `helium_float.h.in`: `<prefix>_fmac_f32` and `_f32x2`, a float convolution's (or fully connected layer's)
  tile of output channels, one or two pixels (`_fmac_dw_f32`, `_f32x2`: a depthwise convolution's), four float
  lanes per vector (VLDRW, VMUL by the scalar input and VADD: the scalar kernel's two roundings, VCTP tails), and
  `<prefix>_bias_act_f32` (`_bias_res_act_f32`), a tile's epilogue, called by Helium's float schedule
  (`backends.cortex_m.schedules.helium_float`); its twin on DSP cores with a scalar FPU is `fpu_float.h.in`
  (`backends.cortex_m.helpers.fpu_float_c`), its portable C the contracts' loops. Its own library (`HELIUM_FLOAT_HELPERS`, `backends.cortex_m.helpers`): a
  float bundle defines it alone, an int8 bundle never.
- `helium_left_shifts.h.in`: `<PREFIX>_LEFT_SHIFTS`, where a kernel's per-channel requantization may shift left
  (TFLite's double rounding, not its right-shift-only variants: `requantize_epilogue.may_shift_left`), which the
  vector requantization tests (without it, no VSHL by the positive shifts: every shift of the bundle <= 0); its own
  library (`HELIUM_LEFT_SHIFTS_HELPERS`), recorded by such a kernel's call of its no-op, first in the bundle;
- `helium_qlinear.h.in`: `<prefix>_qlinear_pointwise_s8`, onnxruntime's QLinearConv of a pointwise NCHW convolution,
  one output channel's pixels per call, 16 pixels per step (VLDRB.S32, VMLA by the channel's weight), and
  `<prefix>_qlinear_row_s8`, any other one's output row per call, four pixels per vector (VLDRB gathers, the
  padding's lanes the zero point by VPSEL), with onnxruntime's float32 requantization four lanes a step (VCVT,
  VMUL, VMAXNM/VMINNM, VRINTN: ties to even), called
  by the kernel Helium's int8 lowering writes for such a QLinearConv (`backends.cortex_m.schedules.helium_qlinear`);
  no DSP twin, its portable C the contract's loops. Its own library (`HELIUM_QLINEAR_HELPERS`): only bundles whose
  kernels call it define it.
- `helium_mac_rows.h.in`: `<prefix>_dual_mac_rows_s8`, every tile of four rows of a recurrent cell's product (an
  LSTM gate's units, an SVDF's filters) over TFLite's [row, input] weights in one out-of-line call, its own loop over
  the tiles from their start values (the one-pixel dual MAC per tile only in its portable C)
  (`backends.cortex_m.schedules.extern_helpers`, the rows' block of `tvm_ext.kernels.extern_mac.accumulate_rows`);
  its DSP cores' counterpart over interleaved weights is `dual_mac_interleaved.h.in`. Its own library
  (`HELIUM_MAC_ROWS_HELPERS`): only bundles whose kernels call it define it.

The q15 pair keeps its DSP body (an Armv8.1-M core with MVE has the DSP extension); Helium's schedules do not
call it. Each Helium body passes its DSP twin's C unit test, built for cortex-m55 and run under QEMU
mps3-an547 (`tests/backends/cortex_m/test_cortex_m_helpers_c.py`).
"""

from __future__ import annotations

from backends.bias_forms import bias_form
from backends.cortex_m.helpers.depthwise_mac_c import DEPTHWISE_MAC_TEMPLATE
from backends.cortex_m.helpers.dual_mac_c import DUAL_MAC_TEMPLATE, MAC_HELPER_TEMPLATES
from backends.cortex_m.helpers.row_dot_c import ROW_DOT_TEMPLATE
from packager.c_text import macro_prefix
from packager.template_files import helper_template_c

HELIUM_LANES_TEMPLATE = "helium_lanes.h.in"
HELIUM_DUAL_MAC_TEMPLATE = "helium_dual_mac.h.in"
HELIUM_ROW_DOT_TEMPLATE = "helium_row_dot.h.in"
HELIUM_DEPTHWISE_TEMPLATE = "helium_depthwise_mac.h.in"
HELIUM_REQUANTIZE_TEMPLATE = "helium_requantize.h.in"
HELIUM_DEPTHWISE16_TEMPLATE = "helium_depthwise16.h.in"
HELIUM_CONV_TILES_TEMPLATE = "helium_conv_tiles.h.in"
HELIUM_ADD_TEMPLATE = "helium_add.h.in"
HELIUM_FC_ROWS_TEMPLATE = "helium_fc_rows.h.in"
HELIUM_FLOAT_TEMPLATE = "helium_float.h.in"
HELIUM_QLINEAR_TEMPLATE = "helium_qlinear.h.in"
HELIUM_LEFT_SHIFTS_TEMPLATE = "helium_left_shifts.h.in"
HELIUM_MAC_ROWS_TEMPLATE = "helium_mac_rows.h.in"
HELIUM_OVERRIDES = {DUAL_MAC_TEMPLATE: HELIUM_DUAL_MAC_TEMPLATE, ROW_DOT_TEMPLATE: HELIUM_ROW_DOT_TEMPLATE}
"""The DSP templates a Helium bundle replaces (their Helium templates have portable C without MVE)."""
MVE_ONLY_OVERRIDES = {DEPTHWISE_MAC_TEMPLATE: HELIUM_DEPTHWISE_TEMPLATE}
"""The DSP templates a Helium bundle keeps for a build without MVE beside the Helium template it defines with MVE."""


def requantize_s8_helper_name(prefix: str, bias: str, table: bool = False) -> str:
    """The C name of the requantization epilogue's helper for biases of type `bias` ("int32" or "int16") in the
    bundle `prefix`; with `table`, the one whose outputs are looked up in a table (`_s8_lut`, `_s8_lut_b16`)."""
    return bias_form(f"{prefix}_requantize_s8_lut" if table else f"{prefix}_requantize_s8", bias)


def depthwise16_helper_name(prefix: str, kind: str) -> str:
    """The C name of the 16-channel depthwise helper `kind` ("mac", "box" or "pad") in the bundle `prefix`."""
    return f"{prefix}_depthwise_{kind}_s8x16"


def conv_tiles_helper_name(prefix: str, bias: str, table: bool = False) -> str:
    """The C name of the fused channel tiles' helper for biases of type `bias` ("int32" or "int16") in the
    bundle `prefix`; with `table`, its form with a lookup table after the requantization."""
    return bias_form(f"{prefix}_conv_tiles{'_lut' if table else ''}_s8", bias)


def shared_conv_tiles_helper_name(prefix: str, bias: str, table: bool = False, copy: str = "shared") -> str:
    """The C name of the fused channel tiles' out-of-line copy for biases of type `bias` ("int32" or "int16") in the
    bundle `prefix`; with `table`, its form with a lookup table after the requantization; `copy`: "shared" (the
    copy gcc may specialize on what its callers agree on) or "generic" (the one kept from its interprocedural
    passes)."""
    return bias_form(f"{prefix}_conv_tiles_{copy}{'_lut' if table else ''}_s8", bias)


def shared_pair_tiles_helper_name(prefix: str, bias: str, table: bool = False, windowed: bool = False) -> str:
    """The C name of the fused pair tiles' out-of-line copy for biases of type `bias` ("int32" or "int16") in the
    bundle `prefix`; with `table`, its form with a lookup table after the requantization; with `windowed`, its form
    copying both pixels' windows into one run each first (`<prefix>_pair_tiles_windowed_s8`)."""
    if windowed:
        return bias_form(f"{prefix}_pair_tiles_windowed_s8", bias)
    return bias_form(f"{prefix}_pair_tiles_shared{'_lut' if table else ''}_s8", bias)


def choose_helper_name(prefix: str) -> str:
    """The C name of the address choice (``<PREFIX>_CHOOSE(inside, a, b)``, a macro of `helium_conv_tiles.h.in`)
    in the bundle `prefix`."""
    return f"{macro_prefix(prefix)}_CHOOSE"


def fc_rows_helper_name(prefix: str, bias: str, form: str = "s8") -> str:
    """The C name of a core family's fused row helper of per-tensor FULLY_CONNECTED layers for biases of type
    `bias` ("int32" or "int16") in the bundle `prefix`, `form` naming how it reads its weights ("s8": Helium's,
    ``helium_fc_rows.h.in``; "s8x8": RV32's paired words, ``backends/riscv/helpers/templates/fc_rows_s8x8.h.in``;
    "s8x4": the DSP cores' stacked weights, ``fc_tiles_s8x4.h.in``)."""
    return bias_form(f"{prefix}_fc_rows_{form}", bias)


def helium_template_c(name: str, prefix: str) -> str:
    """The C a Helium bundle of prefix `prefix` defines for the helper template `name`: its Helium replacement
    (HELIUM_OVERRIDES), the Helium template with MVE and `name` without (MVE_ONLY_OVERRIDES), else `name`."""
    if name in HELIUM_OVERRIDES:
        return helper_template_c(__package__, HELIUM_OVERRIDES[name], prefix)
    kept = helper_template_c(__package__, name, prefix)
    if name not in MVE_ONLY_OVERRIDES:
        return kept
    helium = helper_template_c(__package__, MVE_ONLY_OVERRIDES[name], prefix)
    return f"#if defined({macro_prefix(prefix)}_HELIUM)\n{helium}#else\n{kept}#endif\n"


def helium_mac_helpers_c(prefix: str) -> str:
    """The C definitions of every MAC helper in a Helium bundle of prefix `prefix`: the lanes, then the DSP
    bundle's templates (`backends.cortex_m.helpers.dual_mac_c.MAC_HELPER_TEMPLATES`) in their order, each as
    `helium_template_c` gives it."""
    return helper_template_c(__package__, HELIUM_LANES_TEMPLATE, prefix) + "".join(
        helium_template_c(name, prefix) for name in MAC_HELPER_TEMPLATES)


def helium_requantize_c(prefix: str) -> str:
    """The C definitions of the requantization epilogue's, the 16-channel depthwise, the fused channel
    tiles', the int8 ADD's and the per-tensor fully connected rows' helpers in a Helium bundle of prefix `prefix`
    (after the lanes and the MAC helpers: `helium_mac_helpers_c`)."""
    return "".join(helper_template_c(__package__, name, prefix)
                   for name in (HELIUM_REQUANTIZE_TEMPLATE, HELIUM_DEPTHWISE16_TEMPLATE, HELIUM_CONV_TILES_TEMPLATE,
                                HELIUM_ADD_TEMPLATE, HELIUM_FC_ROWS_TEMPLATE))


def add_s8_helper_name(prefix: str) -> str:
    """The C name of the int8 ADD's helper in the bundle `prefix`."""
    return f"{prefix}_add_s8"


def add_s8_tables_helper_name(prefix: str) -> str:
    """The C name of the int8 ADD's tables' helper in the bundle `prefix`."""
    return f"{prefix}_add_s8_tables"


def helium_depthwise_tiles_helper_name(prefix: str, bias: str, border: str = "", window: str = "") -> str:
    """The C name of the fused depthwise channel tiles' helper for biases of type `bias` ("int32" or "int16") in
    the bundle `prefix`: an interior pixel's (inlined, or where `window` is "3x3" or "5x5" the out-of-line copy for
    such windows, "1xn" the one for windows of one row of any taps), or where `border` ("any", "3x3", "5x5" or
    "3x3 shared") a border pixel's (its window copied with the padding), "3x3" ("5x5") the out-of-line copy for 3x3
    (5x5) windows, "3x3 shared" the one running the interior's 3x3 copy on its copied window."""
    name = {"": f"{prefix}_depthwise_tiles{window}_s8", "any": f"{prefix}_depthwise_border_s8",
            "3x3": f"{prefix}_depthwise_border3x3_s8", "5x5": f"{prefix}_depthwise_border5x5_s8",
            "3x3 shared": f"{prefix}_depthwise_border3x3_shared_s8"}[border]
    return bias_form(name, bias)


def helium_left_shifts_c(prefix: str) -> str:
    """The C a Helium bundle of prefix `prefix` defines where a kernel's per-channel requantization may shift left:
    <PREFIX>_LEFT_SHIFTS (the vector requantization's VSHL by the positive shifts) and its kernels' no-op."""
    return helper_template_c(__package__, HELIUM_LEFT_SHIFTS_TEMPLATE, prefix)


def left_shifts_helper_name(prefix: str) -> str:
    """The C name of the no-op a kernel whose requantization may shift left calls in the bundle `prefix`."""
    return f"{prefix}_left_shifts"


def helium_mac_rows_c(prefix: str) -> str:
    """The C definition of the rows MAC in a Helium bundle of prefix `prefix` (after the MAC helpers,
    `helium_mac_helpers_c`: it uses their pointer-keeping macro, and its portable C their one-pixel dual MAC)."""
    return helper_template_c(__package__, HELIUM_MAC_ROWS_TEMPLATE, prefix)


def mac_rows_helper_name(prefix: str) -> str:
    """The C name of the rows MAC in the bundle `prefix`."""
    return f"{prefix}_dual_mac_rows_s8"


def helium_qlinear_c(prefix: str) -> str:
    """The C definitions of the NCHW QLinearConv helpers in a Helium bundle of prefix `prefix` (the template
    includes <arm_mve.h> itself)."""
    return helper_template_c(__package__, HELIUM_QLINEAR_TEMPLATE, prefix)


def qlinear_pointwise_helper_name(prefix: str) -> str:
    """The C name of the pointwise QLinearConv helper in the bundle `prefix`."""
    return f"{prefix}_qlinear_pointwise_s8"


def qlinear_row_helper_name(prefix: str) -> str:
    """The C name of the QLinearConv output row's helper in the bundle `prefix`."""
    return f"{prefix}_qlinear_row_s8"


def helium_float_c(prefix: str) -> str:
    """The C definitions of the float multiply-accumulates in a Helium bundle of prefix `prefix` (the template
    includes <arm_mve.h> itself: it needs none of the integer helpers)."""
    return helper_template_c(__package__, HELIUM_FLOAT_TEMPLATE, prefix)


def fmac_f32_helper_name(prefix: str, pixels: int, depthwise: bool = False) -> str:
    """The C name of the float multiply-accumulate of `pixels` (1 or 2) output pixels in the bundle `prefix`: a
    convolution's, or where `depthwise` a depthwise convolution's."""
    name = f"{prefix}_fmac_dw_f32" if depthwise else f"{prefix}_fmac_f32"
    return name if pixels == 1 else f"{name}x2"
