"""The bundle's depthwise multiply-accumulate helpers: `<prefix>_depthwise_mac_s8x4` (int8 inputs) and
`<prefix>_depthwise_mac_s16x4` (int16 inputs: TFLite's 16x8 operators whose sums fit int32), `static inline` C in
`<model>_internal.h` beside the dual MAC (`backends.cortex_m.helpers.dual_mac_c`, whose word loads and rotating SXTB16 they use),
called by the depthwise kernels scheduled for a DSP core (`backends.cortex_m.schedules.depthwise_mac`).

Each adds to four int32 accumulators (four consecutive channels of one output pixel) the products of each
window tap's four input channels with the tap's four int8 weights: channels innermost, as NHWC lays them out, so
each tap is one 32-bit load of weights and one (int8) or two (int16) of inputs. Where the compiler defines
`__ARM_FEATURE_DSP`, SXTB16 widens the weight word into int16 pairs (bytes 0 and 2, then 1 and 3) and the
16-bit multiply-accumulates SMLA<x><y> pick the halves: int8 inputs are widened the same way, so SMLABB/SMLATT
pair bottom with bottom and top with top; int16 inputs are already pairs in their two words (channels 0 and 1,
2 and 3), so SMLABB, SMLATB, SMLABT and SMLATT pick each channel's input half beside its weight half, with no
packing: two input loads, one weight load, two SXTB16 and four MACs per tap (PKHBT/PKHTB into SXTB16's order,
as `<prefix>_dual_mac_s16x4` does, add two per tap: a 32x32x16 3x3 SAME layer measured 1,555,720 instructions
against 1,432,488 on cortex-m4f). Depthwise has one product per channel and tap, so SMLAD's
two products would need two taps of one channel in one word: two packs of inputs and two of weights per
channel pair, more than they save. Elsewhere the same sums in portable C. The sums are held in locals
(registers once the helper is inlined) and stored once per call.
Both window loops step by three taps (rows) written out, then the one or two left: the kernels pass the
sizes as constants, so where the helper is inlined a window of up to 3x3 taps (the common depthwise kernel,
and the clipped windows of its padded border) runs as straight-line taps: no loop counters, only loads at
constant offsets. `<prefix>_depthwise_box_s8x4` (`_s16x4`) is the same helper kept out of line (one copy per
bundle) for the clipped windows of a padded border (`tvm_ext.schedule.border_split`), whose sizes differ per rectangle:
code bytes for a few more instructions per call on border pixels. Each channel's products are integer sums:
bit-exact in any order.
"""

from __future__ import annotations


_TAGS = {"int8": "s8", "int16": "s16"}
DEPTHWISE_MAC_INPUT_TYPES = tuple(_TAGS)
"""The input types of the depthwise helpers (their weights are int8)."""
_C_TYPES = {"int8": "int8_t", "int16": "int16_t"}


def depthwise_mac_helper_name(prefix: str, data: str = "int8") -> str:
    """The C name of the helper of ``data`` inputs in the bundle `prefix`."""
    return f"{prefix}_depthwise_mac_{_TAGS[data]}x4"


def depthwise_box_helper_name(prefix: str, data: str = "int8") -> str:
    """The C name of the helper's one out-of-line copy in the bundle `prefix` (same arguments and sums)."""
    return f"{prefix}_depthwise_box_{_TAGS[data]}x4"


def depthwise_mac_helper_c(prefix: str) -> str:
    """The C definitions of the helpers (and of their one-tap and one-row steps) of every input type for the
    bundle `prefix` (after `backends.cortex_m.helpers.dual_mac_c`'s definitions)."""
    outlined = f"{prefix.upper()}_DEPTHWISE_OUTLINED"
    inline = f"{prefix.upper()}_DEPTHWISE_INLINE"
    return f"""
/* Inlined wherever called, whatever gcc's size estimate: the sizes are constants there, so the window's
   loops fold to straight-line taps (an out-of-line copy would loop, and keep the sums in memory). */
#if defined(__GNUC__)
#define {inline} inline __attribute__((always_inline))
#define {outlined} __attribute__((noinline, unused))
#else
#define {inline} inline
#define {outlined}
#endif
""" + "".join(_helpers_c(prefix, data, inline, outlined) for data in DEPTHWISE_MAC_INPUT_TYPES)


def _tap_dsp_c(prefix: str, data: str) -> str:
    """The DSP body of one tap: sums[c] += x[c] * w[c] for c < 4, the weight word widened by SXTB16 (the int8
    helper's C as measured before the int16 one joined it)."""
    if data == "int8":
        return f"""    const int32_t inputs = {prefix}_load_s8x4(x), weights = {prefix}_load_s8x4(w);
    const int32_t x02 = __sxtb16(inputs), w02 = __sxtb16(weights);
    const int32_t x13 = {prefix}_sxtb16_ror8(inputs), w13 = {prefix}_sxtb16_ror8(weights);
    sums[0] = __smlabb(x02, w02, sums[0]);
    sums[1] = __smlabb(x13, w13, sums[1]);
    sums[2] = __smlatt(x02, w02, sums[2]);
    sums[3] = __smlatt(x13, w13, sums[3]);
"""
    return f"""    const int32_t x01 = {prefix}_load_s16x2(x), x23 = {prefix}_load_s16x2(x + 2);
    const int32_t weights = {prefix}_load_s8x4(w);
    const int32_t w02 = __sxtb16(weights), w13 = {prefix}_sxtb16_ror8(weights);
    sums[0] = __smlabb(x01, w02, sums[0]);
    sums[1] = __smlatb(x01, w13, sums[1]);
    sums[2] = __smlabt(x23, w02, sums[2]);
    sums[3] = __smlatt(x23, w13, sums[3]);
"""


def _helpers_c(prefix: str, data: str, inline: str, outlined: str) -> str:
    """The tap, row, inlined and out-of-line helpers of ``data`` inputs; ``inline`` and ``outlined`` name the
    macros `depthwise_mac_helper_c` defines for their storage."""
    tag, c_type = _TAGS[data], _C_TYPES[data]
    name, box = depthwise_mac_helper_name(prefix, data), depthwise_box_helper_name(prefix, data)
    tap = f"{prefix}_depthwise_tap_{tag}x4"
    row = f"{prefix}_depthwise_row_{tag}x4"
    return f"""
/* sums[c] += x[c] * w[c] for the four channels c < 4: one window tap. */
static {inline} void {tap}(int32_t *sums, const {c_type} *x, const int8_t *w)
{{
#if defined(__ARM_FEATURE_DSP)
{_tap_dsp_c(prefix, data)}#else
    sums[0] += x[0] * w[0];
    sums[1] += x[1] * w[1];
    sums[2] += x[2] * w[2];
    sums[3] += x[3] * w[3];
#endif
}}

/* The taps k < cols of one window row (strides in elements): three per step, then the one or two left. */
static {inline} void {row}(int32_t *sums, const {c_type} *x, const int8_t *w, int32_t x_col_stride,
                                  int32_t w_col_stride, int32_t cols)
{{
    int32_t k = 0;
    for (; k + 3 <= cols; k += 3) {{
        {tap}(sums, x + k * x_col_stride, w + k * w_col_stride);
        {tap}(sums, x + (k + 1) * x_col_stride, w + (k + 1) * w_col_stride);
        {tap}(sums, x + (k + 2) * x_col_stride, w + (k + 2) * w_col_stride);
    }}
    if (k < cols) {{
        {tap}(sums, x + k * x_col_stride, w + k * w_col_stride);
    }}
    if (k + 1 < cols) {{
        {tap}(sums, x + (k + 1) * x_col_stride, w + (k + 1) * w_col_stride);
    }}
}}

/* acc[c] += sum over r < rows, k < cols of x[r * x_row_stride + k * x_col_stride + c]
   * w[r * w_row_stride + k * w_col_stride + c], for the four channels c < 4 (strides in elements). */
static {inline} int32_t {name}(int32_t *acc, const {c_type} *x, const int8_t *w, int32_t x_row_stride,
                                  int32_t x_col_stride, int32_t w_row_stride, int32_t w_col_stride, int32_t rows,
                                  int32_t cols)
{{
    int32_t sums[4] = {{acc[0], acc[1], acc[2], acc[3]}};
    int32_t r = 0;
    for (; r + 3 <= rows; r += 3) {{
        {row}(sums, x + r * x_row_stride, w + r * w_row_stride, x_col_stride, w_col_stride, cols);
        {row}(sums, x + (r + 1) * x_row_stride, w + (r + 1) * w_row_stride, x_col_stride, w_col_stride, cols);
        {row}(sums, x + (r + 2) * x_row_stride, w + (r + 2) * w_row_stride, x_col_stride, w_col_stride, cols);
    }}
    if (r < rows) {{
        {row}(sums, x + r * x_row_stride, w + r * w_row_stride, x_col_stride, w_col_stride, cols);
    }}
    if (r + 1 < rows) {{
        {row}(sums, x + (r + 1) * x_row_stride, w + (r + 1) * w_row_stride, x_col_stride, w_col_stride, cols);
    }}
    acc[0] = sums[0];
    acc[1] = sums[1];
    acc[2] = sums[2];
    acc[3] = sums[3];
    return 0;
}}

/* The same sums, one out-of-line copy for the bundle: the clipped windows of padded borders, whose sizes
   differ per rectangle of the border (inlined, each rectangle would be a copy of its taps). */
static {outlined} int32_t {box}(int32_t *acc, const {c_type} *x, const int8_t *w, int32_t x_row_stride,
                                  int32_t x_col_stride, int32_t w_row_stride, int32_t w_col_stride, int32_t rows,
                                  int32_t cols)
{{
    return {name}(acc, x, w, x_row_stride, x_col_stride, w_row_stride, w_col_stride, rows, cols);
}}
"""
