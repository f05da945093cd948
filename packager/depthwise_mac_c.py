"""The bundle's depthwise multiply-accumulate helper: `<prefix>_depthwise_mac_s8x4`, `static inline` C in
`<model>_internal.h` beside the dual MAC (`packager.dual_mac_c`, whose word load and rotating SXTB16 it uses),
called by the depthwise kernels scheduled for a DSP core (`tvm_ext.depthwise_mac`).

It adds to four int32 accumulators (four consecutive channels of one output pixel) the products of each
window tap's four input channels with the tap's four weights: channels innermost, as NHWC lays them out, so
each tap is one 32-bit load of inputs and one of weights. Where the compiler defines `__ARM_FEATURE_DSP`,
SXTB16 widens both words into int16 pairs (bytes 0 and 2, then 1 and 3) and SMLABB/SMLATT multiply-accumulate
the bottom and the top halves: four MACs from two loads and four extensions. Elsewhere the same sums in
portable C. Each channel's products are added in the window's order, as the scalar loop adds them: bit-exact.
"""

from __future__ import annotations


def depthwise_mac_helper_name(prefix: str) -> str:
    """The C name of the helper in the bundle `prefix`."""
    return f"{prefix}_depthwise_mac_s8x4"


def depthwise_mac_helper_c(prefix: str) -> str:
    """The C definition of the helper for the bundle `prefix` (after `packager.dual_mac_c`'s definitions)."""
    name = depthwise_mac_helper_name(prefix)
    return f"""
/* acc[c] += sum over r < rows, k < cols of x[r * x_row_stride + k * x_col_stride + c]
   * w[r * w_row_stride + k * w_col_stride + c], for the four channels c < 4 (strides in elements). */
static inline int32_t {name}(int32_t *acc, const int8_t *x, const int8_t *w, int32_t x_row_stride,
                                  int32_t x_col_stride, int32_t w_row_stride, int32_t w_col_stride, int32_t rows,
                                  int32_t cols)
{{
    int32_t acc0 = acc[0], acc1 = acc[1], acc2 = acc[2], acc3 = acc[3];
    for (int32_t r = 0; r < rows; ++r) {{
        const int8_t *xk = x + r * x_row_stride, *wk = w + r * w_row_stride;
        for (int32_t k = 0; k < cols; ++k, xk += x_col_stride, wk += w_col_stride) {{
#if defined(__ARM_FEATURE_DSP)
            const int32_t inputs = {prefix}_load_s8x4(xk), weights = {prefix}_load_s8x4(wk);
            const int32_t x02 = __sxtb16(inputs), w02 = __sxtb16(weights);
            const int32_t x13 = {prefix}_sxtb16_ror8(inputs), w13 = {prefix}_sxtb16_ror8(weights);
            acc0 = __smlabb(x02, w02, acc0);
            acc1 = __smlabb(x13, w13, acc1);
            acc2 = __smlatt(x02, w02, acc2);
            acc3 = __smlatt(x13, w13, acc3);
#else
            acc0 += xk[0] * wk[0];
            acc1 += xk[1] * wk[1];
            acc2 += xk[2] * wk[2];
            acc3 += xk[3] * wk[3];
#endif
        }}
    }}
    acc[0] = acc0;
    acc[1] = acc1;
    acc[2] = acc2;
    acc[3] = acc3;
    return 0;
}}
"""
