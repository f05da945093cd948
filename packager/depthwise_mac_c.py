"""The bundle's depthwise multiply-accumulate helper: `<prefix>_depthwise_mac_s8x4`, `static inline` C in
`<model>_internal.h` beside the dual MAC (`packager.dual_mac_c`, whose word load and rotating SXTB16 it uses),
called by the depthwise kernels scheduled for a DSP core (`tvm_ext.depthwise_mac`).

It adds to four int32 accumulators (four consecutive channels of one output pixel) the products of each
window tap's four input channels with the tap's four weights: channels innermost, as NHWC lays them out, so
each tap is one 32-bit load of inputs and one of weights. Where the compiler defines `__ARM_FEATURE_DSP`,
SXTB16 widens both words into int16 pairs (bytes 0 and 2, then 1 and 3) and SMLABB/SMLATT multiply-accumulate
the bottom and the top halves: four MACs from two loads and four extensions. Elsewhere the same sums in
portable C. The sums are held in locals (registers once the helper is inlined) and stored once per call.
Both window loops step by three taps (rows) written out, then the one or two left: the kernels pass the
sizes as constants, so where the helper is inlined a window of up to 3x3 taps (the common depthwise kernel,
and the clipped windows of its padded border) runs as straight-line taps: no loop counters, only loads at
constant offsets. `<prefix>_depthwise_box_s8x4` is the same helper kept out of line (one copy per bundle) for
the clipped windows of a padded border (`tvm_ext.border_split`), whose sizes differ per rectangle: code
bytes for a few more instructions per call on border pixels. Each channel's products are integer sums:
bit-exact in any order.
"""

from __future__ import annotations


def depthwise_mac_helper_name(prefix: str) -> str:
    """The C name of the helper in the bundle `prefix`."""
    return f"{prefix}_depthwise_mac_s8x4"


def depthwise_box_helper_name(prefix: str) -> str:
    """The C name of the helper's one out-of-line copy in the bundle `prefix` (same arguments and sums)."""
    return f"{prefix}_depthwise_box_s8x4"


def depthwise_mac_helper_c(prefix: str) -> str:
    """The C definition of the helper (and of its one-tap and one-row steps) for the bundle `prefix` (after
    `packager.dual_mac_c`'s definitions)."""
    name = depthwise_mac_helper_name(prefix)
    tap = f"{prefix}_depthwise_tap_s8x4"
    row = f"{prefix}_depthwise_row_s8x4"
    box = depthwise_box_helper_name(prefix)
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

/* sums[c] += x[c] * w[c] for the four channels c < 4: one window tap. */
static {inline} void {tap}(int32_t *sums, const int8_t *x, const int8_t *w)
{{
#if defined(__ARM_FEATURE_DSP)
    const int32_t inputs = {prefix}_load_s8x4(x), weights = {prefix}_load_s8x4(w);
    const int32_t x02 = __sxtb16(inputs), w02 = __sxtb16(weights);
    const int32_t x13 = {prefix}_sxtb16_ror8(inputs), w13 = {prefix}_sxtb16_ror8(weights);
    sums[0] = __smlabb(x02, w02, sums[0]);
    sums[1] = __smlabb(x13, w13, sums[1]);
    sums[2] = __smlatt(x02, w02, sums[2]);
    sums[3] = __smlatt(x13, w13, sums[3]);
#else
    sums[0] += x[0] * w[0];
    sums[1] += x[1] * w[1];
    sums[2] += x[2] * w[2];
    sums[3] += x[3] * w[3];
#endif
}}

/* The taps k < cols of one window row (strides in elements): three per step, then the one or two left. */
static {inline} void {row}(int32_t *sums, const int8_t *x, const int8_t *w, int32_t x_col_stride,
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
static {inline} int32_t {name}(int32_t *acc, const int8_t *x, const int8_t *w, int32_t x_row_stride,
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
static {outlined} int32_t {box}(int32_t *acc, const int8_t *x, const int8_t *w, int32_t x_row_stride,
                                  int32_t x_col_stride, int32_t w_row_stride, int32_t w_col_stride, int32_t rows,
                                  int32_t cols)
{{
    return {name}(acc, x, w, x_row_stride, x_col_stride, w_row_stride, w_col_stride, rows, cols);
}}
"""
